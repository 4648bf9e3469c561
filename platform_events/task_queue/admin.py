"""django-q2's task pages without the tasks' arguments or return values.

A queued sign-up carries the new password's hash as an argument (tokens/tasks.py), and a failed one
keeps it in its Failure row; no page may show a credential, so the queued, succeeded and failed
task pages show which task ran, when and how it ended, never what it was given or returned.
"""

from django.contrib import admin
from django_q.admin import FailAdmin, QueueAdmin, TaskAdmin
from django_q.models import Failure, OrmQ, Success

HIDDEN_FIELDS = {"args", "kwargs", "result"}


class WithoutArguments:
    def get_fields(self, request, obj=None):
        return [field for field in super().get_fields(request, obj) if field not in HIDDEN_FIELDS]


for model, model_admin in ((Success, TaskAdmin), (Failure, FailAdmin), (OrmQ, QueueAdmin)):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, type(model_admin.__name__, (WithoutArguments, model_admin), {}))
