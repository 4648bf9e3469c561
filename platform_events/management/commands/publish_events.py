import logging
import signal
from datetime import datetime

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.utils import timezone

from platform_events.db.listener import listen_until_signalled, poll_seconds_problem
from platform_events.kafka import relay
from platform_events.kafka.checks import check_stream_has_a_broker

logger = logging.getLogger("platform_events.kafka")


class Relay:
    """One process's relay: its producer, the topics it knows exist, and the wait after an outage."""

    def __init__(self):
        self.producer = relay.new_producer()
        self.topics = relay.Topics()
        self.backoff = relay.Backoff()
        self.elsewhere = ""  # why this relay is not publishing, said once until it changes

    def run_pass(self) -> None:
        try:
            result = relay.publish(producer=self.producer, topics=self.topics)
        except relay.StreamElsewhere as error:
            if str(error) != self.elsewhere:
                logger.error("kafka: publishing nothing: %s", error)
                self.elsewhere = str(error)
            return
        self.elsewhere = ""
        if result.claimed:
            logger.info("kafka: %s claimed, %s published, %s refused", result.claimed, result.published, result.refused)
        if result.fatal:
            logger.error("kafka: the producer failed for good (%s); starting a new one", result.outage)
        if result.outage:
            self.new_producer()
            waited = self.backoff.wait()
            logger.warning("kafka: broker unavailable (%s); waited %.1f s before trying again", result.outage, waited)
        else:
            self.backoff.reset()

    def new_producer(self) -> None:
        """After an outage: librdkafka's idempotent producer stops for good after a fatal error (every later
        message would fail with it), and one that lived through an outage can stay stuck after it (measured:
        once the broker came back empty, its every message timed out). The old one gives up what it still
        holds, so it sends nothing more once its claims are given back; the new one has a new producer id."""
        self.producer.purge()
        self.producer.flush(0)
        self.producer = relay.new_producer()


STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def block_stop_signals() -> None:
    """Hold SIGTERM and SIGINT for ``wait_for_stop_signal()``: blocked before anything says the process
    waits, so that one sent as soon as it is said is waited for, not the default death."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def wait_for_stop_signal() -> None:
    block_stop_signals()
    signal.sigwait(STOP_SIGNALS)


def _moment(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{value!r} is no date or time (2026-11-01 or 2026-11-01T12:00+00:00).") from None
    if moment.tzinfo is None:
        moment = timezone.make_aware(moment)
    return moment


class Command(BaseCommand):
    help = (
        "Publish the outbox's events to Kafka (KAFKA_BOOTSTRAP_SERVERS) as soon as they are written (LISTEN"
        " event_publication), polling as a fallback; or publish the kept events of a period (--since, --until);"
        " or switch publication off for good (--off). Needs a direct connection to PostgreSQL for LISTEN."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="publish what is due, then stop")
        parser.add_argument("--since", help="publish the kept events written from this date or time")
        parser.add_argument("--until", help="... up to this one (default: now)")
        parser.add_argument(
            "--again",
            action="store_true",
            help="with --since: publish the period's events again, published ones too (a broker lost them)",
        )
        parser.add_argument(
            "--off", action="store_true", help="stop keeping events for Kafka and drop the unpublished ones"
        )
        parser.add_argument(
            "--move-topics",
            action="store_true",
            help="publish the waiting events to KAFKA_TOPIC_PREFIX's topics from now on (every relay stopped first)",
        )
        parser.add_argument(
            "--poll-seconds", type=float, help="publish at least this often (default KAFKA_POLL_SECONDS)"
        )

    def handle(self, *args, once, since, until, again, off, move_topics, poll_seconds, **options):
        # Everything is checked before anything starts: a refused command leaves publication as it was.
        period, poll_seconds = self.checked(once, since, until, again, off, move_topics, poll_seconds)
        try:
            if off:
                self.stdout.write(f"Publication to Kafka is off; {relay.stop_stream()} unpublished events dropped.")
            elif move_topics:
                before = relay.move_topics()
                self.stdout.write(
                    f"The stream's waiting events go to the topics prefixed {settings.KAFKA_TOPIC_PREFIX!r} from now"
                    f" on (they were {before!r}); start the relays with this KAFKA_TOPIC_PREFIX."
                )
            elif not settings.KAFKA_BOOTSTRAP_SERVERS:
                if once or period:
                    raise CommandError(
                        "KAFKA_BOOTSTRAP_SERVERS is unset: set it to the broker's host:port to publish events."
                    )
                self.wait_while_off()
            else:
                worker = Relay()
                started = relay.start_stream()
                if period:
                    made = relay.queue_period(*period, again=again)
                    self.stdout.write(f"{made} kept events queued for publication{' again' if again else ''}.")
                elif once:
                    self.publish_once(worker)
                else:
                    self.stdout.write(
                        f"Kafka relay started (publishing since {started:%Y-%m-%d %H:%M:%S %Z});"
                        f" polling every {poll_seconds:g}s."
                    )
                    listen_until_signalled(
                        "event_publication", worker.run_pass, poll_seconds=poll_seconds, what="kafka run"
                    )
                    self.stdout.write("Kafka relay stopped.")
        except (relay.ClientRefused, relay.StreamRefusal) as error:
            raise CommandError(str(error)) from None

    @staticmethod
    def checked(once, since, until, again, off, move_topics, poll_seconds):
        """The options, refused in one sentence when they do not go together (an option the chosen run
        would ignore is refused too; an empty one is given: it is no date). The period, and how often
        the relay polls."""
        others = once or again or since is not None or until is not None or poll_seconds is not None
        if off and (others or move_topics):
            raise CommandError("--off takes no other option: it switches publication off and publishes nothing.")
        if move_topics and others:
            raise CommandError("--move-topics takes no other option: it records the topics and publishes nothing.")
        if until is not None and since is None:
            raise CommandError("--until needs --since: the period to publish starts somewhere.")
        if again and since is None:
            raise CommandError("--again needs --since: it publishes a period again.")
        if since is not None and (once or poll_seconds is not None):
            option = "--once" if once else "--poll-seconds"
            raise CommandError(f"{option} has no use with --since: the period is queued for the running relay.")
        if poll_seconds is not None and (problem := poll_seconds_problem(poll_seconds)):
            raise CommandError(problem)
        if poll_seconds is None:  # KAFKA_POLL_SECONDS: checked for the relay's run alone, not for --off or --since
            poll_seconds = settings.KAFKA_POLL_SECONDS
            if settings.KAFKA_BOOTSTRAP_SERVERS and not off and since is None:
                if problem := poll_seconds_problem(poll_seconds):
                    raise CommandError(problem.replace("--poll-seconds", "KAFKA_POLL_SECONDS"))
        period = (_moment(since), _moment(until) if until is not None else None) if since is not None else None
        if period and period[0] >= (period[1] or timezone.now()):
            raise CommandError(f"A period to publish starts before it ends; {since} is not before {until or 'now'}.")
        return period, poll_seconds

    def wait_while_off(self) -> None:
        """As a Procfile's process with no broker configured: off is a state, not a failure, and an exit
        would stop the processes beside it (honcho) or restart this one in a loop (a platform)."""
        block_stop_signals()
        self.stdout.write(
            "Publication to Kafka is off (KAFKA_BOOTSTRAP_SERVERS unset); the relay waits for a stop signal."
        )
        for warning in check_stream_has_a_broker(None, databases=["default"]):
            logger.warning("kafka: %s %s", warning.msg, warning.hint)
        connection.close()  # nothing to ask the database while waiting
        self.stdout.flush()
        wait_for_stop_signal()

    def publish_once(self, worker: Relay) -> None:
        result = relay.publish(producer=worker.producer, topics=worker.topics)
        self.stdout.write(f"{result.published} events published.")
        if result.outage:
            raise CommandError(f"The broker is unavailable: {result.outage}.")
