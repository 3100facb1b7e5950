"""The autograder's own process: a graded notebook's answers read as data and checked here,
where the student's code cannot reach (``preprocessor.TenFlangGrade`` puts the verdicts into
nbgrader's autograde), and the sandbox the student's code runs in (``sandbox``)."""
