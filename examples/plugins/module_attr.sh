# From the repository's root. mypkg is importable once its folder is on the path; no installation needed.
export PYTHONPATH="$PWD/examples/plugins"

# The plug-in teacher beside Agn and Cur on the car: it plays after the built-ins, and the summary, the figures and
# --heatmap-teacher call it by its name attribute, Cur-eps.
curteach car-irl --init T0 --runs 2 --steps 10 --teachers Agn,Cur,mypkg.teachers:EpsilonCur --heatmap-teacher Cur-eps \
    --out results/plugin-car-irl

# The plug-in car trainer (imitation's BC with a network) beside the built-in BC, with the plug-in curriculum too: its
# cells are mlp-bc_Agn, mlp-bc_Cur, mlp-bc_Cur-2T beside bc_Agn, ...
curteach car-trainers --trainers bc,mypkg.car_trainers:mlp_bc --curricula Agn,Cur,mypkg.curricula:TeacherWeighted \
    --scale small --runs 2 --out results/plugin-car-trainers

# The plug-in teacher and the plug-in learner on FrozenLake (--learning-rate is the learner's eta).
curteach teach --env FrozenLake-v1 --runs 2 --steps 10 --learning-rate 0.3 --teachers Agn,Cur,mypkg.teachers:EpsilonCur \
    --learner mypkg.learners:RecencyImitator --out results/plugin-teach
