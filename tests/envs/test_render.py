"""Rendering: the car's text road and pictures, the navigation grids."""

import numpy as np
import pytest

from curteach_envs import CarTeachEnv
from curteach_envs.navigation.render import NAV_LEGEND, nav_ansi, nav_rgb


def test_ansi_road_shows_the_task_and_the_car():
    env = CarTeachEnv(render_mode="ansi")
    env.reset(options={"task": 7})
    text = env.render()
    lines = text.splitlines()
    assert lines[0] == "task 7 (type T7, instance 0)"
    assert lines[1].startswith(" 9 |") and lines[10].startswith(" 0 |")
    assert "[. " in lines[10]  # the car, bracketed, on the empty bottom-left cell
    assert lines[8].count("*") == 2  # police on both cells of row 2
    assert lines[1].count("H") == 1  # HOV on the right of every row
    env.step(2)
    assert "[H" in env.render().splitlines()[9]


def test_rgb_pictures():
    env = CarTeachEnv(render_mode="rgb_array")
    env.reset(options={"task": 3})
    frame = env.render()
    cell = 16
    assert frame.dtype == np.uint8 and frame.shape == (10 * cell + 2 * 8, 2 * cell + 2 * 8, 3)
    assert (frame == 0).all(axis=2).any()  # the car is drawn in black
    everything = env.picture()
    assert everything.shape == (5 * (10 * cell + 8) + 8, 8 * (2 * cell + 8) + 8, 3)
    one = env.picture(task=0, cell=8)
    assert one.shape == (10 * 8 + 2 * 4, 2 * 8 + 2 * 4, 3)
    # T0 holds only empty road: two colours (road grey and grid lines) besides the white margin
    assert len(np.unique(one.reshape(-1, 3), axis=0)) == 3
    with pytest.raises(ValueError, match=r"task must be an integer in \[0, 39\]"):
        env.picture(task=40)


def test_render_without_mode_returns_none():
    env = CarTeachEnv()
    env.reset(seed=0)
    assert env.render() is None


def test_navigation_grid_text_and_picture():
    kinds = np.full(36, "empty", dtype=object)
    kinds[[0, 7, 14, 21, 28]] = ["start", "mud", "bomb", "goal", "visited"]
    text = nav_ansi(kinds, 4 * 0 + 1, "title")  # the agent on the start cell, facing south
    lines = text.splitlines()
    assert lines[0] == "title" and lines[-1] == "legend: " + NAV_LEGEND
    assert lines[2].startswith(" 0 |[v]|") and " # " in lines[3] and " + " in lines[4] and " G " in lines[5]
    assert " g " in lines[6]
    image = nav_rgb(kinds, -1, cell=8)  # the agent off the grid is not drawn
    assert image.shape == (49, 49, 3) and image.dtype == np.uint8 and not (image == 20).all(axis=2).any()
    assert (nav_rgb(kinds, 4 * 35 + 2, cell=8) == 20).all(axis=2).any()
    with pytest.raises(ValueError, match="cell must be an integer >= 4"):
        nav_rgb(kinds, -1, cell=3)


def test_car_cell_centre_by_hand():
    from curteach_envs.render import car_cell_centre

    # state 0: task 0 (instance 0, type T0), row 0 (drawn at the bottom of its block), left lane; cell 16, gap 8
    assert car_cell_centre(0, n_types=8, road_length=10) == (8 + 8, 8 + 9 * 16 + 8)
    # task 9 = instance 1, type T1; row 3, right lane
    state = 2 * 10 * 9 + 2 * 3 + 1
    x, y = 8 + 1 * (32 + 8) + 16 + 8, 8 + 1 * (160 + 8) + 6 * 16 + 8
    assert car_cell_centre(state, n_types=8, road_length=10) == (x, y)
