// The official TypeScript SDK as a client of a truecall server (tests/interop/test_typed_node.py).
//
//   node typed_client.mjs PLAN.json -- COMMAND ARGS...      (stdio)
//   node typed_client.mjs PLAN.json --url URL --token T     (Streamable HTTP)
//
// PLAN: {"calls": [[tool, arguments], ...], "resources": [uri, ...], "prompts": [[name, arguments], ...]}.
// Prints one JSON object: the protocol version, tools/list, and each call's, read's and prompt's answer
// (a thrown error as {"thrown": message}). The SDK itself checks structuredContent against outputSchema.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [planPath, ...rest] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planPath, "utf8"));
let transport;
if (rest[0] === "--") {
  transport = new StdioClientTransport({ command: rest[1], args: rest.slice(2), env: process.env, stderr: "inherit" });
} else {
  const url = rest[rest.indexOf("--url") + 1];
  const token = rest[rest.indexOf("--token") + 1];
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}
const client = new Client({ name: "truecall-typed-tests", version: "0.0.0" });
const out = { calls: [], resources: [], prompts: [] };
const settle = async (fn) => {
  try {
    return await fn();
  } catch (err) {
    return { thrown: String(err && err.message ? err.message : err) };
  }
};
try {
  await client.connect(transport);
  out.protocolVersion = transport.protocolVersion ?? client.getServerVersion()?.version ?? null;
  out.tools = (await client.listTools()).tools;
  for (const [name, args] of plan.calls ?? []) {
    out.calls.push(await settle(() => client.callTool({ name, arguments: args })));
  }
  for (const uri of plan.resources ?? []) {
    out.resources.push(await settle(() => client.readResource({ uri })));
  }
  for (const [name, args] of plan.prompts ?? []) {
    out.prompts.push(await settle(() => client.getPrompt({ name, arguments: args })));
  }
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
