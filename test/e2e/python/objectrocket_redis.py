"""The objectrocket Python client (PyPI objectrocket 0.7.0) against hangar: a redis instance read
through it, connected to as its get_connection does (the host and port of connect_string, plain).

Usage: python objectrocket_redis.py URL LOGIN PASSWORD NAME
Prints one line per check with its outcome; exits 1 at the first that fails.
"""
import sys

import redis
from objectrocket import Client
from objectrocket.instances.redis import RedisInstance

url, login, password, name = sys.argv[1:5]
client = Client(base_url=url.rstrip('/') + '/v2/')


def check(what, ok, detail=''):
    print(('ok   ' if ok else 'FAIL ') + what + (': ' + str(detail) if detail else ''), flush=True)
    if not ok:
        sys.exit(1)


check('client.authenticate returns a token', bool(client.authenticate(login, password)))
inst = client.instances.get(name)
check('instances.get gives a RedisInstance', isinstance(inst, RedisInstance), type(inst).__name__)
check('its connect_string is a plain redis:// address', inst.connect_string.startswith('redis://'), inst.connect_string)
# as RedisInstance.get_connection reads it (which passes its password method, not the password: a
# bug of the client, so the password is taken from the record as get_connection means to)
host, port = inst.connect_string.strip('redis://').split(':')
conn = redis.StrictRedis(host=host, port=int(port), password=inst._RedisInstance__password, socket_timeout=5)
check('PING through connect_string, in plain', conn.ping() is True)
check('SET and GET', conn.set('objectrocket', 'python') and conn.get('objectrocket') == b'python')
print('all passed', flush=True)
