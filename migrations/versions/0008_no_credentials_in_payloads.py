"""Proxy credentials out of the stored payloads

A DOWNLOAD task's payload used to carry the settings' proxy, password included, and payloads
are stored, shown in the window and printed by ``run --json``. Jobs now get the proxy from the
settings when they run; this removes the proxies with credentials (``user:password@``) that
payloads stored before, once. A task still to run gets the settings' proxy then.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "UPDATE task SET payload = payload - 'proxy' WHERE payload ->> 'proxy' LIKE '%@%'"
        )
        return
    op.execute(
        "UPDATE task SET payload = json_remove(payload, '$.proxy') "
        "WHERE json_extract(payload, '$.proxy') LIKE '%@%'"
    )


def downgrade() -> None:
    """Nothing to put back: a credential is not kept anywhere to restore it from."""
