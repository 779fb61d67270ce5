// A host in Node.js: hand a paste to the Ichor tract, wait for its outcome, print the admitted prompt.
//
//   npm install
//   ICHOR_NATS_URL=nats://127.0.0.1:4222 node host.mjs FILE      (FILE "-" reads standard input)
//
// Exit 0 with the prompt on stdout when admitted; 2 with the reasons on stderr when rejected (a dead
// letter included); 3 when no outcome came within ICHOR_TIMEOUT_S; 1 on any other error.
// Everything it does is in docs/integrating.md: msgpack envelope, headers, blake3 input digest, and the
// outcome: a sealed sender (a secure tract's tenant) reads its own outcome subject, the only part of the
// tract it may read; an open tract's host reads the stream by sequence (never a plain subscription,
// which also sees duplicates).
//
// Environment: ICHOR_NATS_URL, ICHOR_PREFIX (default ichor), ICHOR_ACTOR (who supplied the paste),
// ICHOR_TIMEOUT_S (default 60), and credentials as `ichor security env DIR host` prints them:
// ICHOR_NATS_USER with ICHOR_NATS_NKEY_FILE (an nkey seed) or ICHOR_NATS_PASSWORD. With a seed, the paste
// is sealed: the border of a --secure tract admits only pastes whose seal names who handed them in.

import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";

import { decode, encode } from "@msgpack/msgpack";
import { blake3 } from "@noble/hashes/blake3.js";
import { connect, headers, nkeyAuthenticator, nkeys } from "nats";

const EXIT_REJECTED = 2;
const EXIT_TIMEOUT = 3;
const IDLE_LOOK_MS = 1000;

const hex = (bytes) => Buffer.from(bytes).toString("hex");

function names(prefix) {
  return {
    stomachIn: `${prefix}.stomach.in`,
    ownOutcome: (user) => `${prefix}.outcome.${user}`,
    outcomes: [`${prefix}.brain.in`, `${prefix}.border.rejected`],
    stream: `${prefix.toUpperCase().replaceAll(".", "_")}_TRACT`,
  };
}

function readSeed(env) {
  return env.ICHOR_NATS_NKEY_FILE ? new TextEncoder().encode(readFileSync(env.ICHOR_NATS_NKEY_FILE, "utf8").trim()) : null;
}

function connectOptions(env, seed) {
  const options = { servers: env.ICHOR_NATS_URL || "nats://127.0.0.1:4222", name: "ichor-node-host" };
  const user = env.ICHOR_NATS_USER;
  if (seed) {
    // The seed signs the server's nonce: nothing secret crosses the wire.
    options.authenticator = nkeyAuthenticator(seed);
  } else if (user) {
    options.user = user;
    options.pass = env.ICHOR_NATS_PASSWORD || "";
  }
  if (user) {
    // Under --secure each user may read replies only under its own inbox prefix.
    options.inboxPrefix = `_INBOX_${user}`;
  }
  return options;
}

// The paste envelope: field names and rules as `ichor schema` states them.
function pasteEnvelope(text, { actor, source, now = new Date() }) {
  const id = hex(randomBytes(16));
  return {
    v: 1,
    id,
    kind: "paste",
    source,
    dest: "stomach",
    provenance: { kind: "organ_secretion", organ: source, instance: `${hostname()}-${process.pid}` },
    chain: {
      origin: { kind: "user_input", actor, channel: "node" },
      input_digest: `blake3:${hex(blake3(new TextEncoder().encode(text)))}`,
      steps: [],
    },
    tier: null,
    trace: `00-${hex(randomBytes(16))}-${hex(randomBytes(8))}-01`,
    created_at: now.toISOString(), // RFC 3339 UTC with milliseconds and a Z
    payload: { kind: "paste", text },
  };
}

// The seal: the sender's Ed25519 signature (its nkey) over the msgpack array
// ["seal", key id, origin, input digest, trace id, session]; the origin map keeps the schema's key order.
function sealed(paste, seed) {
  const pair = nkeys.fromSeed(seed);
  const keyId = pair.getPublicKey();
  // What the seal covers besides the chain: the paste's id, time, intent digest and budget (this host sends
  // neither an intent nor a budget), in this order, so a seal lifted onto another paste does not hold.
  const covers = { paste_id: paste.id, created_at: paste.created_at, intent_digest: null, budget_tokens: null };
  const claim = encode(["seal", keyId, paste.chain.origin, paste.chain.input_digest, paste.trace.slice(3, 35), null, covers]);
  const signature = Buffer.from(pair.sign(claim)).toString("base64url");
  return { ...paste, chain: { ...paste.chain, seal: { key_id: keyId, signature, covers } } };
}

// Reads what the stream stores under the outcome subjects from `start` on, one message at a time by
// sequence; a plain subscription only wakes the reader up.
async function awaitOutcome(nc, jsm, subjects, start, traceId, deadline) {
  let next = start;
  let wake = () => {};
  const wakers = subjects.outcomes.map((subject) => nc.subscribe(subject, { callback: () => wake() }));
  try {
    while (Date.now() < deadline) {
      const found = [];
      for (const subject of subjects.outcomes) {
        try {
          found.push(await jsm.streams.getMessage(subjects.stream, { seq: next, next_by_subj: subject }));
        } catch (error) {
          if (!String(error.message).includes("no message found")) throw error;
        }
      }
      if (found.length === 0) {
        await new Promise((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(IDLE_LOOK_MS, Math.max(0, deadline - Date.now())));
        });
        continue;
      }
      const stored = found.reduce((first, msg) => (msg.seq < first.seq ? msg : first));
      next = stored.seq + 1;
      let envelope;
      try {
        envelope = decode(stored.data);
      } catch {
        continue; // not an envelope: not ours to judge
      }
      if (ours(envelope, traceId)) return envelope;
    }
    return null;
  } finally {
    for (const waker of wakers) waker.unsubscribe();
  }
}

const ours = (envelope, traceId) =>
  // The same trace id, and the paste's own outcome (a deferred paste's follow-up comes later).
  envelope.trace?.slice(3, 35) === traceId && envelope.payload?.follow_up_of == null;

// A tenant's own outcome subject, followed before the paste is handed in: the first outcome with the
// paste's trace is its answer (a repeat of it is the same outcome again).
function followOwnOutcome(nc, subject, traceId) {
  let found = () => {};
  const outcome = new Promise((resolve) => (found = resolve));
  const subscription = nc.subscribe(subject, {
    callback: (error, msg) => {
      if (error) return;
      try {
        const envelope = decode(msg.data);
        if (ours(envelope, traceId)) found(envelope);
      } catch {
        // not an envelope: not ours to judge
      }
    },
  });
  const waitUntil = (deadline) =>
    Promise.race([outcome, new Promise((resolve) => setTimeout(() => resolve(null), deadline - Date.now()))]);
  return { waitUntil, stop: () => subscription.unsubscribe() };
}

async function handIn(text, env = process.env) {
  const subjects = names(env.ICHOR_PREFIX || "ichor");
  const seed = readSeed(env);
  const nc = await connect(connectOptions(env, seed));
  try {
    const jsm = await nc.jetstreamManager();
    const js = nc.jetstream();
    const unsealed = pasteEnvelope(text, { actor: env.ICHOR_ACTOR || "node-host", source: "node-host" });
    const paste = seed ? sealed(unsealed, seed) : unsealed;
    const traceId = paste.trace.slice(3, 35);
    const tenant = seed && env.ICHOR_NATS_USER ? followOwnOutcome(nc, subjects.ownOutcome(env.ICHOR_NATS_USER), traceId) : null;
    // Open tract: the outcome can only come after the paste is stored, so read from the stream's next sequence on.
    const start = tenant ? 0 : (await jsm.streams.info(subjects.stream)).state.last_seq + 1;
    await nc.flush();
    const sent = headers();
    sent.set("traceparent", paste.trace);
    sent.set("Ichor-Kind", "paste");
    // msgID is the Nats-Msg-Id header: a paste sent twice is stored once.
    await js.publish(subjects.stomachIn, encode(paste), { msgID: paste.id, headers: sent });
    const deadline = Date.now() + Number(env.ICHOR_TIMEOUT_S || 60) * 1000;
    if (tenant) {
      try {
        return { paste, outcome: await tenant.waitUntil(deadline) };
      } finally {
        tenant.stop();
      }
    }
    return { paste, outcome: await awaitOutcome(nc, jsm, subjects, start, traceId, deadline) };
  } finally {
    await nc.close();
  }
}

async function main(argv) {
  const file = argv[2];
  if (!file) {
    process.stderr.write("usage: node host.mjs FILE   (FILE '-' reads standard input)\n");
    return 1;
  }
  const text = readFileSync(file === "-" ? 0 : file, "utf8");
  const { paste, outcome } = await handIn(text);
  if (outcome === null) {
    process.stderr.write(`no outcome for paste ${paste.id} within the timeout; are the organs up?\n`);
    return EXIT_TIMEOUT;
  }
  if (outcome.kind === "admitted") {
    process.stdout.write(outcome.payload.prompt.text + "\n");
    return 0;
  }
  const letter = outcome.payload.dead_letter;
  process.stderr.write(`paste ${paste.id} was rejected:\n`);
  for (const reason of outcome.payload.reasons) process.stderr.write(`  ${reason.code}: ${reason.message}\n`);
  if (letter) process.stderr.write(`  (dead letter ${letter.id} of the ${letter.organ}: ichor dlq show ${letter.id})\n`);
  return EXIT_REJECTED;
}

main(process.argv).then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`ichor node host: ${error.message || error}\n`);
    process.exit(1);
  },
);
