// The grpc-js client of the interop suite (interop/run.sh). It reads a probe
// request (JSON) on stdin, probes each target through grpc-js's own dns
// resolver, and prints what the published service config did, in the same
// protocol as interop/goclient (interop/README.md).
//
// grpc-js only sends DNS queries to the authority of a dns:// target when
// GRPC_NODE_USE_ALTERNATIVE_RESOLVER=true; the runner sets it.
'use strict';

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO = path.join(__dirname, '..', '..', 'internal', 'testpb', 'echo.proto');

function loadEcho() {
  const def = protoLoader.loadSync(PROTO, { keepCase: true, defaults: true });
  return grpc.loadPackageDefinition(def).grpcconfigdns.test.v1.Echo;
}

const codeNames = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));

function call(client, method, req) {
  return new Promise((resolve) => {
    const deadline = new Date(Date.now() + 10000);
    let backend = [];
    const c = client[method](req, new grpc.Metadata(), { deadline }, (err) => {
      resolve({ code: err ? codeNames[err.code] : 'OK', detail: err ? err.details : '', backend });
    });
    c.on('metadata', (md) => { backend = md.get('backend').map(String); });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function probe(Echo, req, t) {
  const r = { case: t.case, fast: '', slow: '', flaky: '', backends: [] };
  const client = new Echo(`dns://${t.ns}/${t.host}:${req.port}`, grpc.credentials.createInsecure());
  const note = (res) => {
    if (res.code !== 'OK' && !r.detail) r.detail = res.detail;
    return res;
  };
  try {
    r.fast = note(await call(client, 'Echo', {})).code;
    for (let i = 0; i < 30; i++) {
      const res = note(await call(client, 'Echo', {}));
      for (const b of res.backend) if (!r.backends.includes(b)) r.backends.push(b);
      await sleep(15);
    }
    const start = Date.now();
    r.slow = note(await call(client, 'Slow', { sleep_ms: 5000 })).code;
    r.slowMs = Date.now() - start;
    r.flaky = note(await call(client, 'Flaky', { fail_first: 2, key: `grpc-js/${t.case}/${req.key}` })).code;
  } finally {
    client.close();
  }
  return r;
}

// watch calls Flaky (failing once per key) until a published retry policy
// makes it succeed.
async function watch(Echo, req, t) {
  const client = new Echo(`dns://${t.ns}/${t.host}:${req.port}`, grpc.credentials.createInsecure());
  const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');
  let n = 0;
  const flaky = () => call(client, 'Flaky', { fail_first: 1, key: `grpc-js/watch/${req.key}/${++n}` });
  try {
    let res = await flaky();
    if (res.code !== 'UNAVAILABLE') {
      emit({ event: 'error', detail: `first call: ${res.code} ${res.detail}, want UNAVAILABLE` });
      return;
    }
    emit({ event: 'ready' });
    const deadline = Date.now() + req.watchMs;
    while (Date.now() < deadline) {
      res = await flaky();
      if (res.code === 'OK') {
        emit({ event: 'applied' });
        return;
      }
      await sleep(50);
    }
    emit({ event: 'timeout' });
  } finally {
    client.close();
  }
}

async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const Echo = loadEcho();
  if (req.mode === 'probe') {
    const results = await Promise.all(req.targets.map((t) => probe(Echo, req, t)));
    const version = require('@grpc/grpc-js/package.json').version;
    // The host name grpc-js's resolver matches clientHostname with.
    const hostname = require('os').hostname();
    process.stdout.write(JSON.stringify({ client: 'grpc-js', version, hostname, results }) + '\n');
  } else if (req.mode === 'watch') {
    await watch(Echo, req, req.targets[0]);
  } else {
    throw new Error(`mode ${req.mode}: want probe or watch`);
  }
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`node client: ${err.stack || err}\n`);
  process.exit(2);
});
