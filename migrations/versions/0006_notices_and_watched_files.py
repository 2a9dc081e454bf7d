"""Notices of finished runs (``notice``) and the files watch folders took in (``watched_file``)

A run that completes or fails leaves a ``notice`` row in the transaction that ends it; the
desktop app shows each once, also when it was not running when the run ended. A watch folder
records each file it submits by its content, so that a restart, a rename or a touch submits
nothing again.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "notice",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("workflow_run_id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("shown_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["workflow_run_id"],
            ["workflow_run.id"],
            name=op.f("fk_notice_workflow_run_id_workflow_run"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notice")),
    )
    with op.batch_alter_table("notice", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notice_shown_at"), ["shown_at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_notice_workflow_run_id"), ["workflow_run_id"], unique=False
        )
    op.create_table(
        "watched_file",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("folder", sa.Text(), nullable=False),
        sa.Column("template", sa.String(length=128), nullable=False),
        sa.Column("content_fingerprint", sa.String(length=128), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("material_id", sa.String(length=64), nullable=True),
        sa.Column("workflow_run_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("submitted_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_watched_file")),
        sa.UniqueConstraint(
            "folder",
            "template",
            "content_fingerprint",
            name=op.f("uq_watched_file_folder_template_content_fingerprint"),
        ),
    )


def downgrade() -> None:
    op.drop_table("watched_file")
    with op.batch_alter_table("notice", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_notice_workflow_run_id"))
        batch_op.drop_index(batch_op.f("ix_notice_shown_at"))
    op.drop_table("notice")
