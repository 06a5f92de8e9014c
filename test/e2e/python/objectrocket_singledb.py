"""The objectrocket Python client (PyPI objectrocket 0.7.0) against hangar: its MongoDB calls that
concern single instances, on a live mongodb_singledb (FerretDB on the local runtime).

Usage: python objectrocket_singledb.py URL LOGIN PASSWORD NAME
Prints one line per call with its outcome; exits 1 at the first that fails.
"""
import json
import sys
import time

import pymongo
import requests
from objectrocket import Client
from objectrocket.instances.mongodb import MongodbInstance

url, login, password, name = sys.argv[1:5]
client = Client(base_url=url.rstrip('/') + '/v2/')


def check(what, ok, detail=''):
    print(('ok   ' if ok else 'FAIL ') + what + (': ' + str(detail) if detail else ''), flush=True)
    if not ok:
        sys.exit(1)


token = client.authenticate(login, password)
check('client.authenticate returns a token', bool(token))

inst = client.instances.create(name, 1, 'US-Dallas', service_type='mongodb', instance_type='mongodb_singledb', version='1.24.2')
check('instances.create gives a MongodbInstance', isinstance(inst, MongodbInstance), type(inst).__name__)
check('its fields', (inst.name, inst.service, inst.type, inst.plan) == (name, 'mongodb', 'mongodb_singledb', 1),
      (inst.name, inst.service, inst.type, inst.plan, inst.version))

state = None
for _ in range(600):
    got = client.instances.get(name)
    state = got.to_dict().get('state')
    if state == 'ACTIVE':
        break
    time.sleep(0.1)
check('instances.get until ACTIVE', state == 'ACTIVE', state)
check('connect_string is host:port', got.connect_string.count(':') == 1, got.connect_string)

check('instances.all lists it', name in [i.name for i in client.instances.all()])

# the spec answers an ACL create with the new ACL's id (a string), which this client turns into None
got.acls.create(cidr_mask='127.0.0.1', description='objectrocket client')
acls = got.acls.all()
check('acls.create, then acls.all lists it', any(a.cidr_mask.startswith('127.0.0.1') for a in acls), [a.cidr_mask for a in acls])

# the client has no user calls: the user comes from the spec's endpoint, with the client's token
res = requests.post(url.rstrip('/') + '/v2/mongodb/' + name + '/databases/app/users',
                    headers={'X-Auth-Token': token, 'Content-Type': 'application/json'},
                    data=json.dumps({'username': 'app', 'password': 'password-1', 'roles': [{'role': 'readWrite', 'db': 'app'}]}))
check('a user through the spec endpoint', res.status_code == 200, res.text)

conn = got.get_authenticated_connection('app', 'password-1', db='app', ssl=False, serverSelectionTimeoutMS=5000)
conn.app.things.insert_one({'from': 'python'})
check('get_authenticated_connection: writes and reads', conn.app.things.count_documents({'from': 'python'}) == 1)
conn.close()

try:
    bad = got.get_authenticated_connection('app', 'wrong-password', db='app', ssl=False, serverSelectionTimeoutMS=5000)
    bad.app.things.count_documents({})
    refused = False
except pymongo.errors.OperationFailure:
    refused = True
check('a wrong password is refused', refused)

plain = got.get_connection(ssl=False, serverSelectionTimeoutMS=5000)
check('get_connection without credentials: ping', plain.admin.command('ping').get('ok') == 1)
try:
    plain.list_database_names()
    listed = True
except pymongo.errors.OperationFailure:
    listed = False
check('... but no data without credentials', not listed)
plain.close()
print('all passed')
