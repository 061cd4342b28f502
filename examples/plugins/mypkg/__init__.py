"""mypkg: a teacher, a curriculum, a learner and a car trainer for curteach, written outside the package
(docs/extending.md)."""
