# From the repository's root. Installing mypkg declares its entry points (pyproject.toml); then short names work.
pip install ./examples/plugins

curteach car-irl --init T0 --runs 2 --steps 10 --teachers Agn,Cur,Cur-eps --out results/plugin-car-irl-ep
curteach car-trainers --trainers bc,mlp-bc --curricula Agn,Cur-2T --scale small --runs 2 \
    --out results/plugin-car-trainers-ep
curteach teach --env FrozenLake-v1 --runs 2 --steps 10 --learning-rate 0.3 --teachers Agn,Cur,Cur-eps \
    --learner recency --out results/plugin-teach-ep
