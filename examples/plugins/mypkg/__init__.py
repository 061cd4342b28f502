"""mypkg: a teacher, a curriculum and a learner for curteach, written outside the package (docs/extending.md)."""
