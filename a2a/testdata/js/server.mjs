// A small A2A server written with the official JS SDK (@a2a-js/sdk),
// knowing nothing of Parley: it paints (a completed task with an
// artifact {"result": ...}) and rejects anything else with a reason. It
// listens on a free loopback port, prints its URL on the first line of
// standard output, and exits when standard input closes.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler } from "@a2a-js/sdk/server";

const card = {
  name: "js-painter",
  description: "Paints, and knows nothing of Parley.",
  url: "",
  version: "1",
  protocolVersion: "0.3.0",
  preferredTransport: "JSONRPC",
  capabilities: {},
  defaultInputModes: ["application/json"],
  defaultOutputModes: ["application/json", "text/plain"],
  skills: [{ id: "paint", name: "paint", description: "paints what it is asked to", tags: ["paint"] }],
};

class Painter {
  async execute(ctx, bus) {
    const data = ctx.userMessage.parts.find((p) => p.kind === "data")?.data ?? {};
    const action = String(data.action ?? "");
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    const now = () => new Date().toISOString();
    if (!ctx.task) {
      bus.publish({ kind: "task", id: ctx.taskId, contextId: ctx.contextId, status: { state: "submitted", timestamp: now() }, history: [ctx.userMessage] });
    }
    if (action.startsWith("paint")) {
      bus.publish({ kind: "artifact-update", ...ids, artifact: { artifactId: randomUUID(), name: "result", parts: [{ kind: "data", data: { result: `${action}: done by js` } }] } });
      bus.publish({ kind: "status-update", ...ids, status: { state: "completed", timestamp: now() }, final: true });
    } else {
      const reason = { kind: "message", role: "agent", messageId: randomUUID(), ...ids, parts: [{ kind: "text", text: "the js painter only paints" }] };
      bus.publish({ kind: "status-update", ...ids, status: { state: "rejected", message: reason, timestamp: now() }, final: true });
    }
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    bus.finished();
  }
}

const rpc = new JsonRpcTransportHandler(new DefaultRequestHandler(card, new InMemoryTaskStore(), new Painter()));

const server = http.createServer(async (req, res) => {
  if (req.method === "GET" && req.url === "/.well-known/agent-card.json") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(card));
    return;
  }
  let body = "";
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 1 << 20) {
      res.writeHead(413);
      res.end();
      return;
    }
  }
  let request;
  try {
    request = JSON.parse(body);
  } catch {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } }));
    return;
  }
  const response = await rpc.handle(request);
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(response));
});

server.listen(0, "127.0.0.1", () => {
  card.url = `http://127.0.0.1:${server.address().port}/`;
  console.log(card.url);
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
