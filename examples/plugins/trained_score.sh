# From the repository's root. mypkg is importable once its folder is on the path; no installation needed.
export PYTHONPATH="$PWD/examples/plugins${PYTHONPATH:+:$PYTHONPATH}"

# A small Minari dataset of CartPole demonstrations (a hand-written controller, a third of them noisy).
python examples/datasets/scripted_cartpole.py --root results/plugin-datasets --episodes 12
export MINARI_DATASETS_PATH="$PWD/results/plugin-datasets"

# The trained score ranks the dataset and keeps the half that agrees most with its neighbours...
curteach rank --dataset cartpole/scripted-v0 --score mypkg.scores:ActionDisagreement --keep 0.5 \
    --out results/plugin-rank

# ...and is Cur-T's task difficulty in dataset-bc, beside a weighted sum with length.
curteach dataset-bc --dataset cartpole/scripted-v0 --task-difficulty mypkg.scores:ActionDisagreement \
    --curricula "Agn,Cur-T@select,Cur-T@select/mypkg.scores:ActionDisagreement+length" --runs 1 --max-batches 40 \
    --eval-every 20 --eval-episodes 2 --workers 1 --no-progress --out results/plugin-dataset-bc
