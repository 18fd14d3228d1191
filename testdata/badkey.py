#!/usr/bin/python3
"""Publish one message whose message-annotations map has a binary key:
valid AMQP encoding, an invalid annotation key, and the message that made
go-amqp v1.7.0 panic in its connection goroutine (amqp/keyguard.go).

usage: badkey.py URL ADDRESS   (URL: amqp://[user:password@]host:port;
with a user, SASL PLAIN, else ANONYMOUS)
"""
import sys
from urllib.parse import urlsplit

from proton import Message
from proton.utils import BlockingConnection

url, addr = sys.argv[1], sys.argv[2]
u = urlsplit(url)
kw = {}
if u.username:
    kw = dict(user=u.username, password=u.password or "", allowed_mechs="PLAIN")
conn = BlockingConnection("amqp://%s:%d" % (u.hostname, u.port or 5672), **kw)
try:
    snd = conn.create_sender(addr)
    snd.send(Message(body="bad key", annotations={b"binkey": 1}, properties={"poison": True}))
finally:
    conn.close()
