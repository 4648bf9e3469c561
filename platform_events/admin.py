"""The platform's pages in the back-office. Django discovers this module only; each feature keeps its
admin in its own folder, registered by importing it here."""

import platform_events.api.admin  # noqa: F401
import platform_events.lockouts.admin  # noqa: F401
import platform_events.outbox.admin  # noqa: F401
import platform_events.task_queue.admin  # noqa: F401
import platform_events.webhooks.admin  # noqa: F401
