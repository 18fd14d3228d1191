#!/usr/bin/python3
"""Publish one message go-amqp v1.7.0 cannot decode (an AMQP decimal64
body): a poison message for fedrouter's tests.

usage: poison.py URL ADDRESS
"""
import sys

from proton import Message, decimal64
from proton.utils import BlockingConnection

url, addr = sys.argv[1], sys.argv[2]
conn = BlockingConnection(url, user="guest", password="guest", allowed_mechs="PLAIN")
try:
    snd = conn.create_sender(addr)
    snd.send(Message(body=decimal64(12345), properties={"poison": True}))
finally:
    conn.close()
