"""Alembic environment for the one Fredica database (the queue's tables and the library's).

Fredica runs migrations itself at start-up (:func:`fredica_app.database.migrate`) and passes
its connection in ``config.attributes["connection"]``; the whole upgrade runs inside that
connection's one transaction, so a failing migration rolls back and leaves the file as it was.
"""

from __future__ import annotations

from alembic import context

from fredica_app.database import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # pragma: no cover - only when alembic's own CLI is used by hand
    import sqlalchemy as sa

    from workers.db import create_sqlite_engine

    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("set sqlalchemy.url, e.g. alembic -x ... or use `fredica` itself")
    engine = create_sqlite_engine(sa.make_url(url).database)  # type: ignore[arg-type]
    with engine.begin() as conn:
        context.configure(
            connection=conn,
            target_metadata=metadata,
            transactional_ddl=True,
            render_as_batch=True,
        )
        context.run_migrations()
else:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        transactional_ddl=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()
