"""The experiments: one package per experiment, each owning its settings, its recipes and its report.

* :mod:`~curteach_teaching.experiments.car`: the paper's teacher-centric experiments on the car (MaxEnt-IRL, BC,
  limited observability, imitation's trainers);
* :mod:`~curteach_teaching.experiments.nav`: the paper's learner-centric experiment on the two navigation tasks;
* :mod:`~curteach_teaching.experiments.theory`: sensitivity, Theorem 2 and the monotonicity of Theorems 1 and 3;
* :mod:`~curteach_teaching.experiments.tabular`: the teacher-centric experiment on any tabular environment.

Every experiment runs on the sweep runner of :mod:`curteach_teaching.sweeps`, which imports none of them.
"""
