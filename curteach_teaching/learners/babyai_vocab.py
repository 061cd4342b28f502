"""BabyAI missions as token ids: the fixed vocabulary, the tokeniser and the policy's observation space.

imitation's ``BC`` turns observations into tensors (``util.safe_to_tensor`` on every key of a ``DictObs``) and SB3's
``predict`` checks every key against its space, so a mission string cannot reach a network. Missions are therefore
tokenised *before* a policy sees them, once, on NumPy arrays:

* demonstrations: :func:`encode_observations` maps a batch of BabyAI observations (``mission`` a list of strings) to
  the policy's observations (``mission`` an ``(N, L)`` int64 array of token ids);
* environments: :class:`MissionTokens` wraps a BabyAI env so that its observations are already the policy's.

The vocabulary is fixed (never learned from data, never downloaded): the 32 words of the BabyAI grammar as Minigrid
3.x writes its missions (``minigrid.envs.babyai.core.verifier``: the verbs ``go to``, ``pick up``, ``open``, ``put
... next to``; the connectives ``and``, ``then``, ``after you``; ``a``/``the``; ``object``; the locations ``in front
of you``, ``behind you``, ``on your left/right``; the 6 colours of ``minigrid.core.constants.COLOR_NAMES``; the 4
object types ``box ball key door``). Sampling 20 missions of each of Minigrid 3.2's 96 BabyAI levels gives exactly
these words. Id 0 is padding and id 1 stands for any other word, so a mission from a future grammar still encodes.

Tokenising is BabyAI's own rule: lower case, then every maximal run of letters ``a-z`` is a word (commas and
spaces separate words and are dropped). A mission longer than :data:`MAX_MISSION_TOKENS` words keeps its first
:data:`MAX_MISSION_TOKENS` (the longest sampled mission, of BabyAI-MiniBossLevel, has 37).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = [
    "BABYAI_WORDS",
    "IMAGE_SHAPE",
    "MAX_MISSION_TOKENS",
    "MISSION_CHARSET",
    "MISSION_MAX_CHARACTERS",
    "N_ACTIONS",
    "N_DIRECTIONS",
    "PAD_ID",
    "UNK_ID",
    "VOCABULARY",
    "MissionTokens",
    "encode_missions",
    "encode_observations",
    "mission_text_space",
    "policy_observation_space",
    "tokenize",
]

#: The words of BabyAI's mission grammar (Minigrid 3.x), sorted.
BABYAI_WORDS = (
    "a", "after", "and", "ball", "behind", "blue", "box", "door", "front", "go", "green", "grey", "in", "key",
    "left", "next", "object", "of", "on", "open", "pick", "purple", "put", "red", "right", "the", "then", "to",
    "up", "yellow", "you", "your",
)  # fmt: skip
#: Padding after the last word of a mission.
PAD_ID = 0
#: Any word outside :data:`BABYAI_WORDS`.
UNK_ID = 1
#: Token id -> word: ``<pad>``, ``<unk>``, then :data:`BABYAI_WORDS`.
VOCABULARY = ("<pad>", "<unk>", *BABYAI_WORDS)
#: Words kept per mission (the width of the ``mission`` token array).
MAX_MISSION_TOKENS = 64
#: ``max_length`` of the ``Text`` space that stores mission strings in datasets (the longest sampled: 166).
MISSION_MAX_CHARACTERS = 512
#: Characters of a stored mission string (Minigrid writes lower-case words, spaces and commas).
MISSION_CHARSET = string.ascii_lowercase + " ,"
#: ``(height, width, channels)`` of BabyAI's egocentric view: object type, colour and state indices per cell.
IMAGE_SHAPE = (7, 7, 3)
#: Headings of the agent (``obs["direction"]``).
N_DIRECTIONS = 4
#: left, right, forward, pickup, drop, toggle, done.
N_ACTIONS = 7

_WORD_IDS = {word: index for index, word in enumerate(VOCABULARY)}
_WORD = re.compile("[a-z]+")


def tokenize(mission: str) -> list[int]:
    """The token ids of one mission, in order, unpadded and untruncated (see the module docstring)."""
    if not isinstance(mission, str):
        raise ValueError(f"a mission must be a string; got {type(mission).__name__}")
    return [_WORD_IDS.get(word, UNK_ID) for word in _WORD.findall(mission.lower())]


def encode_missions(missions: Sequence[str] | np.ndarray, max_tokens: int = MAX_MISSION_TOKENS) -> np.ndarray:
    """``(N,)`` mission strings -> ``(N, max_tokens)`` int64 token ids, padded with :data:`PAD_ID`.

    Missions repeat at every step of an episode, so each distinct string is tokenised once.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive integer; got {max_tokens!r}")
    if isinstance(missions, str):
        raise ValueError("encode_missions takes a sequence of missions; use tokenize for one string")
    encoded = np.full((len(missions), int(max_tokens)), PAD_ID, dtype=np.int64)
    rows: dict[str, np.ndarray] = {}
    for index, mission in enumerate(missions):
        if mission not in rows:
            ids = tokenize(mission)[:max_tokens]
            rows[mission] = np.asarray(ids, dtype=np.int64)
        row = rows[mission]
        encoded[index, : len(row)] = row
    return encoded


def mission_text_space() -> gym.spaces.Text:
    """The ``Text`` space that stands for Minigrid's ``MissionSpace`` in stored datasets (Minari can serialise it)."""
    return gym.spaces.Text(max_length=MISSION_MAX_CHARACTERS, min_length=0, charset=MISSION_CHARSET)


def policy_observation_space(max_tokens: int = MAX_MISSION_TOKENS) -> gym.spaces.Dict:
    """What a BabyAI policy observes: ``direction`` ``Discrete(4)``, ``image`` ``Box(0, 255, (7, 7, 3), uint8)``
    and ``mission`` ``Box(0, len(VOCABULARY) - 1, (max_tokens,), int64)`` token ids."""
    return gym.spaces.Dict({
        "direction": gym.spaces.Discrete(N_DIRECTIONS),
        "image": gym.spaces.Box(0, 255, shape=IMAGE_SHAPE, dtype=np.uint8),
        "mission": gym.spaces.Box(0, len(VOCABULARY) - 1, shape=(int(max_tokens),), dtype=np.int64),
    })


def encode_observations(observations: Mapping[str, Any], max_tokens: int = MAX_MISSION_TOKENS) -> dict[str, np.ndarray]:
    """A batch of BabyAI observations -> the policy's observations (:func:`policy_observation_space`, batched).

    Args:
        observations: ``image`` ``(N, 7, 7, 3)``, ``direction`` ``(N,)`` and ``mission`` ``(N,)`` strings (a list,
            or an array of str/object), as Minari returns an episode's observations.

    Returns:
        ``{"direction": (N,) int64, "image": (N, 7, 7, 3) uint8, "mission": (N, max_tokens) int64}``.

    Raises:
        ValueError: a missing key, or arrays of different lengths.
    """
    missing = {"direction", "image", "mission"} - set(observations)
    if missing:
        raise ValueError(f"BabyAI observations need keys direction, image, mission; missing {sorted(missing)}")
    image = np.asarray(observations["image"], dtype=np.uint8)
    direction = np.asarray(observations["direction"], dtype=np.int64).reshape(-1)
    missions = list(observations["mission"])
    if not (len(image) == len(direction) == len(missions)) or image.shape[1:] != IMAGE_SHAPE:
        raise ValueError(f"need image (N, 7, 7, 3), direction (N,) and mission (N,); got image {image.shape}, "
                         f"direction {direction.shape}, {len(missions)} missions")
    return {"direction": direction, "image": image, "mission": encode_missions(missions, max_tokens)}


class MissionTokens(gym.ObservationWrapper):
    """A BabyAI env whose observations are the policy's: the mission string becomes ``(max_tokens,)`` token ids.

    ``observation_space`` is :func:`policy_observation_space`; ``direction`` becomes an int64 scalar array.
    """

    def __init__(self, env: gym.Env, max_tokens: int = MAX_MISSION_TOKENS):
        super().__init__(env)
        self.max_tokens = int(max_tokens)
        self.observation_space = policy_observation_space(self.max_tokens)
        self._cache: dict[str, np.ndarray] = {}

    def observation(self, observation: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """``{"image", "direction", "mission": str}`` -> ``{"direction", "image", "mission": (max_tokens,) ids}``."""
        mission = observation["mission"]
        if mission not in self._cache:
            self._cache[mission] = encode_missions([mission], self.max_tokens)[0]
        return {
            "direction": np.asarray(observation["direction"], dtype=np.int64),
            "image": np.asarray(observation["image"], dtype=np.uint8),
            "mission": self._cache[mission].copy(),
        }
