#!/usr/bin/python3
"""Publish one message go-amqp v1.7.0 cannot decode (an AMQP decimal64
body): a poison message for fedrouter's tests. With --take, consume (accept)
the next message of ADDRESS instead: what an operator does to remove it.

usage: poison.py URL ADDRESS [--take]
"""
import sys

from proton import Message, decimal64
from proton.utils import BlockingConnection

url, addr = sys.argv[1], sys.argv[2]
take = "--take" in sys.argv[3:]
conn = BlockingConnection(url, user="guest", password="guest", allowed_mechs="PLAIN")
try:
    if take:
        rcv = conn.create_receiver(addr, credit=1)
        msg = rcv.receive(timeout=10)
        rcv.accept()
        print("took", repr(msg.body))
    else:
        snd = conn.create_sender(addr)
        snd.send(Message(body=decimal64(12345), properties={"poison": True}))
finally:
    conn.close()
