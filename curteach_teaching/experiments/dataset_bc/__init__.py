"""The learner-centric experiment on any demonstration dataset; here, so far: BabyAI bot datasets.

``babyai_data`` plans and plays ``BabyAIBot`` episodes (seeded, in parallel, optionally noisy); ``babyai_minari``
writes them as one Minari dataset per level and reads them back as imitation trajectories. The evaluator is the
library's (:mod:`curteach_teaching.rollouts`). Names are imported on first use (Minari, Minigrid and torch load only
then).
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_LAZY = {
    "HELD_OUT_SEEDS": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "NOISE_STEP_PROBABILITY": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "TRAINING_SEEDS": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "BotEpisode": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "EpisodePlan": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "babyai_level_ids": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "generate_bot_episodes": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "make_level": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "make_policy_env": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "plan_episodes": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "resolve_levels": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "run_bot_episode": "curteach_teaching.experiments.dataset_bc.babyai_data",
    "DATA_FORMATS": "curteach_teaching.experiments.dataset_bc.babyai_minari",
    "babyai_trajectories": "curteach_teaching.experiments.dataset_bc.babyai_minari",
    "dataset_id": "curteach_teaching.experiments.dataset_bc.babyai_minari",
    "episode_seeds": "curteach_teaching.experiments.dataset_bc.babyai_minari",
    "load_babyai_dataset": "curteach_teaching.experiments.dataset_bc.babyai_minari",
    "replay_episode": "curteach_teaching.experiments.dataset_bc.babyai_minari",
    "write_babyai_datasets": "curteach_teaching.experiments.dataset_bc.babyai_minari",
    "write_level_dataset": "curteach_teaching.experiments.dataset_bc.babyai_minari",
}
__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY, globals())
