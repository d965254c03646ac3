"""Gates for CI: budgets, diff, the ``check`` configuration — documents in, verdicts out."""
