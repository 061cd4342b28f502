# From the repository's root. mypkg is importable once its folder is on the path; no installation needed.
export PYTHONPATH="$PWD/examples/plugins${PYTHONPATH:+:$PYTHONPATH}"

# A small Minari dataset of scripted Pendulum demonstrations (a third of them noisy), in a folder of its own.
export MINARI_DATASETS_PATH="$PWD/results/minari"
python examples/datasets/scripted_pendulum.py --root "$MINARI_DATASETS_PATH" --episodes 12

# The plug-in learner under Agn, Cur and Cur weighting its loss, rolled out in Pendulum-v1 (greedy and sampled).
curteach dataset-bc --dataset pendulum/scripted-v0 --policy mypkg.dataset_learners:LinearGaussian \
    --learning-rate 0.01 --curricula Agn,Cur,Cur@weight --runs 2 --max-batches 200 --eval-every 100 \
    --eval-episodes 3 --no-progress --workers 1 --out results/plugin-dataset-bc

# Without the environment: scored on a held-out quarter of the episodes (nll and mse), Cur-L reading its likelihoods.
curteach dataset-bc --dataset pendulum/scripted-v0 --env none --holdout 0.25 \
    --policy mypkg.dataset_learners:LinearGaussian --learning-rate 0.01 --curricula Agn,Cur-L --runs 2 \
    --max-batches 200 --eval-every 100 --no-progress --workers 1 --out results/plugin-dataset-bc-held-out

# The same learner as the ensemble's members in rank: five on bootstrap halves score each episode they did not see.
curteach rank --dataset pendulum/scripted-v0 --policy mypkg.dataset_learners:LinearGaussian --learning-rate 0.01 \
    --score ensemble --ensemble-batches 100 --keep 0.5 --no-progress --out results/plugin-rank
