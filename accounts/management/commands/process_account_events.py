from django.core.management.base import BaseCommand

from accounts.nodes.consumer import process_account_events


class Command(BaseCommand):
    help = (
        "Apply account events to node assignments once (tokenserver's process_account_events): a deleted"
        " account's assignments are retired, a changed password raises their generation. One pass, for cron;"
        " the worker runs it every minute. Any number may run at once: each event has one effect."
    )

    def handle(self, *args, **options):
        self.stdout.write(self.style.SUCCESS(process_account_events()))
