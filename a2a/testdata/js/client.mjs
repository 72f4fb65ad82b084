// An A2A client written with the official JS SDK (@a2a-js/sdk), knowing
// nothing of Parley: it drives the agent at the URL given (the painter of
// examples/a2a) by sending data parts, with message/send and
// message/stream, and prints what it saw as one JSON object for the Go
// test to check.
import { randomUUID } from "node:crypto";
import { ClientFactory } from "@a2a-js/sdk/client";

const base = process.argv[2].replace(/\/$/, "");
const client = await new ClientFactory().createFromUrl(base);

function message(data, extra = {}) {
  return {
    message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "data", data }], ...extra },
  };
}

function failure(e) {
  const err = e.errorResponse?.error;
  return { error: e.constructor.name, code: err?.code ?? null, detail: err?.data?.error ?? e.message };
}

async function attempt(f) {
  try {
    await f();
    return { error: "none" };
  } catch (e) {
    return failure(e);
  }
}

const out = {};
const card = await client.getAgentCard();
out.card = { name: card.name, skills: card.skills.map((s) => s.id) };

const paint = await client.sendMessage(message({ action: "paint the fence" }));
out.paint = {
  kind: paint.kind,
  state: paint.status.state,
  artifact: paint.artifacts?.[0]?.parts?.find((p) => p.kind === "data")?.data ?? null,
  hasContext: typeof paint.contextId === "string" && paint.contextId.length > 0,
};

const got = await client.getTask({ id: paint.id });
out.get = { state: got.status.state, sameTask: got.id === paint.id, sameContext: got.contextId === paint.contextId };

const mow = await client.sendMessage(message({ action: "mow the lawn" }));
out.mow = {
  state: mow.status.state,
  reason: mow.status.message?.parts?.find((p) => p.kind === "text")?.text ?? null,
};

out.unknownGet = await attempt(() => client.getTask({ id: "no-such-task" }));
out.unknownSend = await attempt(() => client.sendMessage(message({ action: "paint" }, { taskId: "no-such-task" })));
out.terminal = await attempt(() =>
  client.sendMessage(message({ action: "paint it again" }, { taskId: paint.id, contextId: paint.contextId })),
);

const stream = [];
let streamed = null;
for await (const ev of client.sendMessageStream(message({ action: "paint the door" }))) {
  stream.push(ev.kind === "status-update" && ev.final ? `final:${ev.status.state}` : ev.kind);
  if (ev.kind === "artifact-update") streamed = ev.artifact.parts.find((p) => p.kind === "data")?.data ?? null;
  if (ev.kind === "task" && ev.artifacts?.length) streamed = ev.artifacts[0].parts.find((p) => p.kind === "data")?.data ?? null;
}
out.stream = { first: stream[0], last: stream[stream.length - 1], artifact: streamed };

console.log(JSON.stringify(out));
