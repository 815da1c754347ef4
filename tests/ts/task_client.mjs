// The official TypeScript SDK client (conformance/node_modules) calls a task-required tool of a
// truecall server as a 2025-11-25 task (params.task) and prints, as one JSON line, every message
// its callToolStream yields (taskCreated, taskStatus, result or error), then the task's tasks/result.
//   node task_client.mjs URL TOKEN TOOL ARGUMENTS_JSON
import { pathToFileURL } from "node:url";
import path from "node:path";

const [url, token, tool, argsJson] = process.argv.slice(2);
const sdk = path.resolve(process.env.TS_SDK_DIR, "dist", "esm");
const { Client } = await import(pathToFileURL(path.join(sdk, "client", "index.js")).href);
const { StreamableHTTPClientTransport } = await import(pathToFileURL(path.join(sdk, "client", "streamableHttp.js")).href);

// ELICIT_ANSWER (JSON): declare elicitation and answer every elicitation/create with it.
const answer = process.env.ELICIT_ANSWER ? JSON.parse(process.env.ELICIT_ANSWER) : null;
const client = new Client({ name: "truecall-ts-task-test", version: "0" },
  { capabilities: answer ? { elicitation: { form: {} } } : {} });
const asked = [];
if (answer) {
  const { ElicitRequestSchema } = await import(pathToFileURL(path.join(sdk, "types.js")).href);
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return answer;
  });
}
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} },
});
await client.connect(transport);
const seen = [];
let taskId = null;
try {
  await client.listTools(); // the SDK learns execution.taskSupport from the listing
  for await (const message of client.experimental.tasks.callToolStream(
    { name: tool, arguments: JSON.parse(argsJson) }, undefined, { task: { ttl: 60000 } })) {
    if (message.type === "error") {
      seen.push({ type: "error", message: String(message.error?.message ?? message.error) });
    } else if (message.type === "result") {
      seen.push({ type: "result", result: message.result });
    } else {
      taskId = taskId ?? message.task?.taskId ?? null;
      seen.push({ type: message.type, status: message.task?.status });
    }
  }
  if (taskId !== null) {
    // What tasks/result returns: exactly what the plain call would have (also for a failed task,
    // which the SDK's stream reports only as "failed").
    const { CallToolResultSchema } = await import(pathToFileURL(path.join(sdk, "types.js")).href);
    seen.push({ type: "taskResult", result: await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema) });
  }
} catch (err) {
  seen.push({ type: "thrown", message: String(err?.message ?? err) });
}
console.log(JSON.stringify({ protocolVersion: transport.protocolVersion ?? null, seen, asked }));
await client.close();
