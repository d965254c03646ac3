"""``graphmem host``: the profile of the machine graphmem runs on, which ``--host`` reads back.

Redirect ``graphmem host --json`` into a file on the machine a model will run on, then pass
that file as ``--host FILE`` to any command whose figures depend on the machine (``peak``,
``layers``, ``report``, ``train``, ``sweep``, ``fit``, ``check``, ``diff``) wherever graphmem runs.
"""

from __future__ import annotations

import typer

from graphmem.cli.common import HostOption, JsonOption, handled, host_of

__all__ = ["register", "host_command"]


@handled
def host_command(as_json: JsonOption = False, host: HostOption = None) -> None:
    """This machine's profile (CPU flags, caches, threads), as graphmem's rules read it.

    --json prints the document that --host FILE reads back; with --host FILE, that file's
    profile, checked.
    """
    from graphmem.host import host_table

    profile = host_of(host)
    typer.echo(profile.to_json().rstrip("\n") if as_json else host_table(profile))


def register(app: typer.Typer) -> None:
    """Add ``host`` to the CLI."""
    app.command("host")(host_command)
