#!/usr/bin/python3
"""An AMQP 1.0 peer that takes messages and never settles them: a
destination that accepts the attach, grants credit, and then decides
nothing — what makes a route stall for fedrouter's tests. On SIGUSR1 it
accepts every message it holds, and every one after. With --reject it
rejects every message at once instead (amqp:resource-limit-exceeded,
"queue full"): a destination that refuses, which RabbitMQ 3.10 and qpidd
do not give over AMQP 1.0 (RabbitMQ's plugin crashes the session on a
reject-publish overflow; qpidd releases past its max_count). With
--fail-on-poison it accepts every message at once, except one whose
application property "poison" is true: on that one it closes the link
with amqp:internal-error, settling nothing — a destination that fails on
one message, every time it is sent (a route's poison message).

usage: nosettle.py HOST:PORT [--reject | --fail-on-poison]
It prints "listening" once it listens, then "accepting" after SIGUSR1.
"""
import signal
import sys

from proton import Condition
from proton.handlers import MessagingHandler
from proton.reactor import Container


class NoSettle(MessagingHandler):
    def __init__(self, addr):
        super().__init__(prefetch=100, auto_accept=False, auto_settle=False)
        self.addr = addr
        self.held = []
        self.accepting = False
        self.wanted = False

    def on_start(self, event):
        self.container = event.container
        event.container.listen(self.addr)
        print("listening", flush=True)
        event.container.schedule(0.1, self)

    def on_timer_task(self, event):
        # The signal only sets a flag: the reactor acts on it here.
        if self.wanted and not self.accepting:
            self.accepting = True
            for d in self.held:
                self.accept(d)
            self.held = []
            print("accepting", flush=True)
        self.container.schedule(0.1, self)

    def on_message(self, event):
        if FAIL_ON_POISON:
            props = event.message.properties or {}
            if props.get("poison"):
                event.link.condition = Condition("amqp:internal-error", "cannot take this message")
                event.link.close()
            else:
                self.accept(event.delivery)
        elif REJECT:
            event.delivery.local.condition = Condition("amqp:resource-limit-exceeded", "queue full")
            self.reject(event.delivery)
        elif self.accepting:
            self.accept(event.delivery)
        else:
            self.held.append(event.delivery)


REJECT = "--reject" in sys.argv[2:]
FAIL_ON_POISON = "--fail-on-poison" in sys.argv[2:]
handler = NoSettle(sys.argv[1])


def wanted(*_):
    handler.wanted = True


signal.signal(signal.SIGUSR1, wanted)
Container(handler).run()
