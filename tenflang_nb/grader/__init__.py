"""The autograder's own process: a graded notebook's answers read as data and checked here,
where the student's code cannot reach (``preprocessor.TenFlangGrade`` puts the verdicts into
nbgrader's autograde), an engine's functions called in a process of their own (``engine``,
``engine_child``), the cells the student's kernel need run (``skip``) and the sandbox it runs
in (``sandbox``)."""
