"""Environment ids as ``gym.make`` users expect them: an id of an installed package that registers its environments
when imported (``BabyAI-GoToObj-v0`` of minigrid, ``Meta-World/MT1`` of metaworld) works without naming the package.

Gymnasium finds an id only once the package that registers it has been imported; ``module:Id``
(``minigrid:BabyAI-GoToObj-v0``) imports ``module`` first. :func:`check_env_id` looks an id up in Gymnasium's
registry and, where it is not there, imports the packages of :data:`REGISTERING_PACKAGES` that are installed, one by
one, lazily (only then, so that reading a dataset never pays for them), and looks again; an id still unknown is one
line naming it and the ``module:Id`` form.

A dataset records its environment's spec, entry point included (``gymnasium.envs.mujoco.ant_v5:AntEnv``,
``metaworld...``); :func:`check_entry_point` imports that module, as ``gym.make`` does first, so that an environment
whose package is not installed is one line naming the package before anything runs.
"""

from __future__ import annotations

import importlib
import importlib.util

import gymnasium as gym

__all__ = ["REGISTERING_PACKAGES", "check_entry_point", "check_env_id"]

#: packages whose import registers environment ids, imported (where installed) when an id is not registered
REGISTERING_PACKAGES = ("curteach_envs", "minigrid", "metaworld")


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def check_env_id(env_id: str) -> gym.envs.registration.EnvSpec:
    """The registered spec of ``env_id`` (``Id`` or ``module:Id``), after importing the installed
    :data:`REGISTERING_PACKAGES` where ``Id`` is not registered yet.

    Raises:
        ValueError: an empty id, a ``module`` that does not import, or an id that no imported package registers
            (one line naming it and the ``module:Id`` form).
    """
    if not isinstance(env_id, str) or not env_id.strip():
        raise ValueError(f"an environment id must be a non-empty string; got {env_id!r}")
    module, _, name = env_id.rpartition(":")
    if module:  # the user named the package that registers the id: import it, as gym.make does
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ValueError(f"environment {env_id!r}: cannot import {module!r} ({_one_line(error)})") from None
    try:
        return gym.spec(name)
    except gym.error.UnregisteredEnv as error:
        if module:  # nothing else to import
            raise ValueError(f"no environment {name!r} in {module!r}: {_one_line(error)}") from None
        last = error
    except gym.error.Error as error:  # a deprecated version, ...
        raise ValueError(f"environment {env_id!r}: {_one_line(error)}") from None
    imported = []
    for package in REGISTERING_PACKAGES:
        if importlib.util.find_spec(package) is None:
            continue
        try:
            importlib.import_module(package)
        except ImportError:  # installed but broken (a missing dependency): it registers nothing
            continue
        imported.append(package)
        try:
            return gym.spec(env_id)
        except gym.error.UnregisteredEnv as error:
            last = error
        except gym.error.Error as error:
            raise ValueError(f"environment {env_id!r}: {_one_line(error)}") from None
    raise ValueError(f"no environment {env_id!r} is registered, also after importing {', '.join(imported) or 'none'} "
                     f"({_one_line(last)}); an id of another package is written module:Id, e.g. "
                     "my_package:MyEnv-v0")


def check_entry_point(spec: gym.envs.registration.EnvSpec) -> None:
    """Import the module of ``spec``'s entry point (as ``gym.make`` does before it makes the environment); a callable
    entry point is already imported.

    Raises:
        ValueError: the module, or a package it imports, is not installed (one line naming the package), or the
            entry point does not load.
    """
    entry = spec.entry_point
    if not isinstance(entry, str):
        return
    try:
        gym.envs.registration.load_env_creator(entry)
    except ModuleNotFoundError as error:
        missing = (error.name or entry.partition(":")[0]).split(".")[0]
        raise ValueError(f"environment {spec.id!r} needs the package {missing!r}, which is not installed (its entry "
                         f"point is {entry!r})") from None
    except (ImportError, AttributeError, ValueError) as error:
        raise ValueError(f"environment {spec.id!r}: cannot load its entry point {entry!r} ({type(error).__name__}: "
                         f"{_one_line(error)})") from None
