#!/usr/bin/env node
// End-to-end driver: the official MCP TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2)
// against Arbor's demo server, legacy era, over real stdio pipes.
//
// Usage: node driver.mjs [--timeout SECONDS] [--label NAME] -- SERVER_CMD [ARGS...]
//        node driver.mjs [--timeout SECONDS] [--label NAME] --url URL
//
// The SDK's StdioClientTransport launches SERVER_CMD (run.sh passes the tap
// wrapper around the demo server); with --url the SDK's
// StreamableHTTPClientTransport talks to a running server instead (run.sh
// passes http_tap.py's URL in front of `demo_server --port 0`), and the
// session is ended with DELETE at the end. The client offers 2025-11-25 in
// initialize, declares form-mode elicitation and sampling, and runs: ping, the
// four lists, echo/add, resources/read of a resource and a template,
// prompts/get, confirm_delete answered through the elicitation/create request
// handler (once accepted, once declined), slow_count with progress and debug
// logging (after logging/setLevel), summarize answered through the
// sampling/createMessage request handler, and resources/subscribe to
// demo://feed with notifications/resources/updated after publish_feed (over
// HTTP on the session's standalone GET stream). Then the 2025-11-25 tasks through the
// SDK's `client.experimental.tasks` (the demo's `slow_square`, task support optional,
// and `build_report`, required): the tasks capability and each tool's
// execution.taskSupport, callToolStream (task-augmented tools/call, tasks/get polled to
// completed, tasks/result), tasks/get and tasks/result again (with the related-task
// _meta), tasks/list, a Required tool called without a task (-32601), tasks/cancel of a
// running task (cancelled) and of a finished one (-32602), an unknown task id (-32602).
//
// Each check prints `PASS: <name>` or `FAIL: <name>: <why>`; the exit status
// is non-zero if any check failed or the run broke off.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  LATEST_PROTOCOL_VERSION,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { check, checks, equal, finish } from './checks.mjs';

const ECHO_MESSAGE = 'héllo from TypeScript ✓ "quoted" \\ back\\slash';
const DELETE_PATH = 'notes/ts-draft.txt';
const KEEP_PATH = 'notes/ts-keep.txt';
const SUMMARY = 'Arbor answers TypeScript too.';
const TEXT_TO_SUMMARIZE = 'A long text about supervised actors, one per MCP request, written for the TypeScript client.';

checks.prefix = 'typescript-legacy';

/** The text of a result whose content is exactly one text block, else undefined. */
function onlyText(result) {
  const content = result?.content;
  if (!Array.isArray(content) || content.length !== 1 || content[0]?.type !== 'text') return undefined;
  return content[0].text;
}

function confirmSchemaOk(params) {
  const mode = params?.mode ?? 'form';
  if (mode !== 'form') return [false, `expected form mode, got ${mode}`];
  const schema = params.requestedSchema ?? {};
  const confirm = schema.properties?.confirm;
  if (schema.type !== 'object' || confirm?.type !== 'boolean') {
    return [false, `requestedSchema lacks a boolean 'confirm' property: ${JSON.stringify(schema)}`];
  }
  if (!(schema.required ?? []).includes('confirm')) return [false, `'confirm' is not required: ${JSON.stringify(schema)}`];
  return [true, ''];
}

function parseArgs(argv) {
  let timeout = 60;
  let url;
  let label = 'typescript-legacy';
  const rest = [...argv];
  while (rest.length && rest[0] !== '--') {
    const flag = rest.shift();
    if (flag === '--timeout') timeout = Number(rest.shift());
    else if (flag === '--url') url = rest.shift();
    else if (flag === '--label') label = rest.shift();
    else throw new Error(`unknown option ${flag}`);
  }
  rest.shift(); // '--'
  if (!rest.length === !url) throw new Error('usage: driver.mjs [--timeout S] [--label NAME] (--url URL | -- SERVER_CMD [ARGS...])');
  return { timeout, url, label, command: rest };
}

async function sleep(ms) {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

/** resources/subscribe demo://feed, then notifications/resources/updated after publish_feed. */
async function feed(client, updates, options) {
  const subscribed = await client.subscribeResource({ uri: 'demo://feed' }, options);
  check('resources/subscribe demo://feed answered', subscribed !== undefined && typeof subscribed === 'object', subscribed);
  const before = updates.length;
  const published = await client.callTool({ name: 'publish_feed', arguments: { text: 'typescript item' } }, undefined, options);
  equal('publish_feed result', onlyText(published), 'Published');
  for (let i = 0; i < 200 && updates.length === before; i += 1) await sleep(50);
  check('notifications/resources/updated for demo://feed after publish_feed', updates.length > before, updates);
  let text;
  for (let i = 0; i < 20; i += 1) {
    const read = await client.readResource({ uri: 'demo://feed' }, options);
    text = read.contents[0]?.text;
    if (text === 'typescript item') break;
    await sleep(100);
  }
  equal('resources/read demo://feed shows the item', text, 'typescript item');
  const unsubscribed = await client.unsubscribeResource({ uri: 'demo://feed' }, options);
  check('resources/unsubscribe demo://feed answered', unsubscribed !== undefined && typeof unsubscribed === 'object', unsubscribed);
}

/** The JSON-RPC error code a rejected SDK call carried, or the value it resolved to. */
async function errorCode(promise) {
  try {
    return { resolved: await promise };
  } catch (error) {
    return error?.code;
  }
}

const RELATED_TASK = 'io.modelcontextprotocol/related-task';

/** The 2025-11-25 tasks, through the SDK's experimental tasks API. */
async function tasks(client, options) {
  const api = client.experimental.tasks;
  const caps = client.getServerCapabilities() ?? {};
  check(
    'tasks: capability with list, cancel and requests.tools.call',
    Boolean(caps.tasks?.list && caps.tasks?.cancel && caps.tasks?.requests?.tools?.call),
    caps.tasks ?? 'no tasks capability',
  );
  const listed = await client.listTools(undefined, options);
  const byName = Object.fromEntries(listed.tools.map((t) => [t.name, t]));
  equal('tasks: slow_square execution.taskSupport', byName.slow_square?.execution?.taskSupport, 'optional');
  equal('tasks: build_report execution.taskSupport', byName.build_report?.execution?.taskSupport, 'required');
  check('tasks: echo does not support tasks', (byName.echo?.execution?.taskSupport ?? 'forbidden') === 'forbidden', byName.echo);

  // callToolStream: tools/call with params.task, tasks/get until terminal, tasks/result.
  const ttl = 60000;
  const messages = [];
  const stream = api.callToolStream({ name: 'slow_square', arguments: { n: 7, delay_ms: 300 } }, CallToolResultSchema, {
    ...options,
    task: { ttl },
  });
  for await (const message of stream) messages.push(message);
  const created = messages.find((m) => m.type === 'taskCreated')?.task;
  const id = created?.taskId;
  check('tasks: slow_square as a task answers a CreateTaskResult with a taskId', typeof id === 'string' && id !== '', messages);
  equal('tasks: the created task is working', created?.status, 'working');
  equal('tasks: the created task keeps the requested ttl', created?.ttl, ttl);
  const statuses = messages.filter((m) => m.type === 'taskStatus').map((m) => m.task.status);
  check(
    'tasks: tasks/get polled until completed',
    statuses.length > 0 && statuses.at(-1) === 'completed' && statuses.slice(0, -1).every((s) => s === 'working'),
    statuses,
  );
  const last = messages.at(-1);
  equal('tasks: tasks/result returns the tool result (7 squared)', last?.type === 'result' ? onlyText(last.result) : last, '49');
  if (!id) return;

  const got = await api.getTask(id, options);
  equal('tasks: tasks/get of the finished task', [got.taskId, got.status], [id, 'completed']);
  const again = await api.getTaskResult(id, CallToolResultSchema, options);
  equal('tasks: tasks/result again returns the same result', onlyText(again), '49');
  equal('tasks: tasks/result carries the related-task _meta', again._meta?.[RELATED_TASK]?.taskId, id);
  const all = await api.listTasks(undefined, options);
  check(
    'tasks: tasks/list shows the completed task',
    all.tasks.some((t) => t.taskId === id && t.status === 'completed'),
    all.tasks.map((t) => [t.taskId, t.status]),
  );

  // A Required tool: the SDK makes it a task by itself; without params.task the server refuses.
  const report = [];
  for await (const message of api.callToolStream({ name: 'build_report', arguments: { items: 3 } }, CallToolResultSchema, options)) {
    report.push(message);
  }
  check('tasks: build_report (required) ran as a task', report.some((m) => m.type === 'taskCreated'), report);
  equal('tasks: build_report result', report.at(-1)?.type === 'result' ? onlyText(report.at(-1).result) : report.at(-1), 'Report of 3 items');
  const plain = client.request({ method: 'tools/call', params: { name: 'build_report', arguments: { items: 3 } } }, CallToolResultSchema, options);
  equal('tasks: build_report called without a task is -32601', await errorCode(plain), -32601);

  // tasks/cancel of a running task, then of a finished one.
  const running = await client.request(
    { method: 'tools/call', params: { name: 'slow_square', arguments: { n: 9, delay_ms: 30000 } } },
    CreateTaskResultSchema,
    { ...options, task: { ttl } },
  );
  const runningId = running.task?.taskId;
  equal('tasks: the long task is working', running.task?.status, 'working');
  const cancelled = await api.cancelTask(runningId, options);
  equal('tasks: tasks/cancel of a running task answers it cancelled', [cancelled.taskId, cancelled.status], [runningId, 'cancelled']);
  equal('tasks: tasks/get after the cancel', (await api.getTask(runningId, options)).status, 'cancelled');
  equal('tasks: tasks/cancel of a cancelled task is -32602', await errorCode(api.cancelTask(runningId, options)), -32602);
  equal('tasks: tasks/cancel of a completed task is -32602', await errorCode(api.cancelTask(id, options)), -32602);
  equal('tasks: tasks/get still shows the completed task completed', (await api.getTask(id, options)).status, 'completed');

  // An id that never existed.
  const unknown = 'no-such-task-0000';
  equal('tasks: tasks/get of an unknown id is -32602', await errorCode(api.getTask(unknown, options)), -32602);
  equal('tasks: tasks/result of an unknown id is -32602', await errorCode(api.getTaskResult(unknown, CallToolResultSchema, options)), -32602);
  equal('tasks: tasks/cancel of an unknown id is -32602', await errorCode(api.cancelTask(unknown, options)), -32602);
}

async function scenario(client, transport, timeoutMs) {
  const elicitations = [];
  let answer = { action: 'accept', content: { confirm: true } };

  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicitations.push(request.params);
    return answer;
  });
  const samplings = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    samplings.push(request.params);
    return { role: 'assistant', content: { type: 'text', text: SUMMARY }, model: 'e2e-model', stopReason: 'endTurn' };
  });
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params);
  });
  const updates = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    if (notification.params.uri === 'demo://feed') updates.push(notification.params);
  });
  // Sniff the initialize result (Protocol.connect chains an onmessage set before it).
  let negotiated;
  transport.onmessage = (message) => {
    if (message?.id !== undefined && typeof message?.result?.protocolVersion === 'string' && negotiated === undefined) {
      negotiated = message.result.protocolVersion;
    }
  };
  const options = { timeout: timeoutMs };

  await client.connect(transport, options);

  equal('initialize: negotiated the SDK offer', negotiated, LATEST_PROTOCOL_VERSION);
  const info = client.getServerVersion();
  check('initialize: serverInfo present', Boolean(info?.name), info);
  const caps = client.getServerCapabilities() ?? {};
  check('initialize: tools, resources and prompts capabilities', Boolean(caps.tools && caps.resources && caps.prompts), caps);

  const pong = await client.ping(options);
  check('ping answered', pong !== undefined && typeof pong === 'object', pong);

  const tools = await client.listTools(undefined, options);
  const byName = Object.fromEntries(tools.tools.map((t) => [t.name, t]));
  check('tools/list names', ['echo', 'add', 'confirm_delete'].every((n) => n in byName), Object.keys(byName));
  const echoSchema = byName.echo?.inputSchema ?? {};
  check(
    "echo inputSchema has a required string 'message'",
    echoSchema.properties?.message?.type === 'string' && (echoSchema.required ?? []).includes('message'),
    echoSchema,
  );
  const pathProp = byName.confirm_delete?.inputSchema?.properties?.path;
  check("confirm_delete inputSchema has a string 'path'", pathProp?.type === 'string', byName.confirm_delete);

  let result = await client.callTool({ name: 'echo', arguments: { message: ECHO_MESSAGE } }, undefined, options);
  equal('tools/call echo returns exactly the message', onlyText(result), ECHO_MESSAGE);
  check('tools/call echo is not an error', !result.isError, result);

  result = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }, undefined, options);
  check('tools/call add 2+3 = 5', Number(onlyText(result)) === 5, `got ${JSON.stringify(onlyText(result))}`);
  result = await client.callTool({ name: 'add', arguments: { a: 0.25, b: 0.5 } }, undefined, options);
  check('tools/call add 0.25+0.5 = 0.75', Number(onlyText(result)) === 0.75, `got ${JSON.stringify(onlyText(result))}`);

  const resources = await client.listResources(undefined, options);
  const uris = resources.resources.map((r) => r.uri);
  check('resources/list has demo://readme', uris.includes('demo://readme'), uris);

  const templates = await client.listResourceTemplates(undefined, options);
  const utemplates = templates.resourceTemplates.map((t) => t.uriTemplate);
  check('resources/templates/list has demo://notes/{id}', utemplates.includes('demo://notes/{id}'), utemplates);

  let read = await client.readResource({ uri: 'demo://readme' }, options);
  equal('resources/read demo://readme: one content', read.contents.length, 1);
  equal('resources/read demo://readme: uri', read.contents[0]?.uri, 'demo://readme');
  check('resources/read demo://readme: non-empty text', typeof read.contents[0]?.text === 'string' && read.contents[0].text.trim() !== '', read.contents[0]);

  read = await client.readResource({ uri: 'demo://notes/7' }, options);
  equal('resources/read demo://notes/7: one content', read.contents.length, 1);
  equal('resources/read demo://notes/7: uri', read.contents[0]?.uri, 'demo://notes/7');
  check('resources/read demo://notes/7: text names the id', typeof read.contents[0]?.text === 'string' && read.contents[0].text.includes('7'), read.contents[0]);

  const prompts = await client.listPrompts(undefined, options);
  const greet = prompts.prompts.find((p) => p.name === 'greet');
  check('prompts/list has greet', greet !== undefined, prompts.prompts.map((p) => p.name));
  check("greet takes a 'name' argument", (greet?.arguments ?? []).some((a) => a.name === 'name'), greet);

  const got = await client.getPrompt({ name: 'greet', arguments: { name: 'Grace Hopper' } }, options);
  check('prompts/get greet: at least one message', got.messages.length >= 1, got);
  equal('prompts/get greet: first message role', got.messages[0]?.role, 'user');
  const content = got.messages[0]?.content;
  check('prompts/get greet: first message is text naming the person', content?.type === 'text' && content.text.includes('Grace Hopper'), content);

  // elicitation/create sent by the server while tools/call is in flight
  answer = { action: 'accept', content: { confirm: true } };
  result = await client.callTool({ name: 'confirm_delete', arguments: { path: DELETE_PATH } }, undefined, options);
  equal('confirm_delete (accept): server asked the client exactly once', elicitations.length, 1);
  if (elicitations.length) {
    const [ok, why] = confirmSchemaOk(elicitations[0]);
    check("confirm_delete (accept): form asks for boolean 'confirm'", ok, why);
    check('confirm_delete (accept): message names the path', String(elicitations[0].message).includes(DELETE_PATH), elicitations[0].message);
  }
  equal('confirm_delete (accept): result text', onlyText(result), `Deleted ${DELETE_PATH}`);

  elicitations.length = 0;
  answer = { action: 'decline' };
  result = await client.callTool({ name: 'confirm_delete', arguments: { path: KEEP_PATH } }, undefined, options);
  equal('confirm_delete (decline): server asked the client exactly once', elicitations.length, 1);
  equal('confirm_delete (decline): result text', onlyText(result), `Kept ${KEEP_PATH}`);

  // slow_count: notifications/progress for the request, and debug log messages once asked for.
  const setLevel = await client.setLoggingLevel('debug', options);
  check('logging/setLevel debug answered', setLevel !== undefined && typeof setLevel === 'object', setLevel);
  const steps = [];
  logs.length = 0;
  result = await client.callTool({ name: 'slow_count', arguments: { to: 3, interval_ms: 10 } }, undefined, {
    ...options,
    onprogress: (p) => steps.push([p.progress, p.total, p.message]),
  });
  equal('tools/call slow_count result', onlyText(result), 'Counted to 3');
  // The SDK runs notification handlers in a microtask but settles the response at
  // once, dropping the request's progress handler: a last notification that arrives
  // in the same read as the response is lost on the client's side. So the steps
  // seen here must be a non-empty prefix of 1..3 (the Python scenarios check all
  // three, and the capture shows every one the server sent).
  const expectedSteps = [
    [1, 3, 'Counted 1 of 3'],
    [2, 3, 'Counted 2 of 3'],
    [3, 3, 'Counted 3 of 3'],
  ];
  check(
    'slow_count: progress notifications count up to 3 of 3',
    steps.length > 0 && JSON.stringify(steps) === JSON.stringify(expectedSteps.slice(0, steps.length)),
    `expected a non-empty prefix of ${JSON.stringify(expectedSteps)}, got ${JSON.stringify(steps)}`,
  );
  equal(
    'slow_count: debug log messages',
    logs.filter((m) => m.logger === 'slow_count').map((m) => m.data),
    ['counted 1', 'counted 2', 'counted 3'],
  );

  // summarize: the server asks the client's model with sampling/createMessage.
  result = await client.callTool({ name: 'summarize', arguments: { text: TEXT_TO_SUMMARIZE } }, undefined, options);
  equal('summarize: the server asked the client model exactly once', samplings.length, 1);
  const firstContent = samplings[0]?.messages?.[0]?.content;
  check(
    'summarize: the sampling request carries the text',
    firstContent?.type === 'text' && firstContent.text.includes(TEXT_TO_SUMMARIZE) && samplings[0].maxTokens > 0,
    samplings[0],
  );
  equal("summarize: result is the model's reply", onlyText(result), SUMMARY);

  await feed(client, updates, options);
  await tasks(client, options);
}

async function main() {
  const { timeout, url, label, command } = parseArgs(process.argv.slice(2));
  checks.prefix = label;
  const timeoutMs = timeout * 1000;
  const transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: 'inherit' });
  const client = new Client(
    { name: 'arbor-e2e-typescript', version: '1.32.2' },
    { capabilities: { elicitation: { form: {} }, sampling: {} } },
  );
  let timer;
  try {
    await Promise.race([
      scenario(client, transport, timeoutMs),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`scenario timed out after ${timeout}s`)), timeoutMs);
      }),
    ]);
    check('scenario ran to the end', true);
  } catch (error) {
    console.error(error?.stack ?? String(error));
    check('scenario ran to the end', false, `${error?.name ?? 'Error'}: ${error?.message ?? String(error)} (stack on stderr)`);
  } finally {
    clearTimeout(timer);
    if (url) {
      // Ends the HTTP session (DELETE); stdio ends with the process below.
      await transport.terminateSession().catch((error) => check('DELETE ends the session', false, String(error)));
    }
    // Ends the server: stdin closed, then SIGTERM, then SIGKILL (the SDK's own shutdown).
    await client.close().catch(() => {});
  }
  finish();
}

main();
