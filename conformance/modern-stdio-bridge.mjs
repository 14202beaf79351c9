// A minimal 2026-07-28 HTTP front for ONE long-lived stdio MCP server process, for
// measuring scenarios whose state spans requests (the tasks extension) before the real
// HTTP transport exists. supergateway's modern path starts a process per request (and
// keeps one only for a requestState continuation), so a task created by one request is
// gone for the next; a stateless 2026-07-28 server on stdio multiplexes any number of
// requests on one process, which is what this does.
//
// It is a test aid, not a transport: each POSTed request is forwarded with a fresh id,
// its response returned as JSON (404 for -32601, 400 for -32020/-32021/-32022, 200
// otherwise), notifications from the server are dropped, notification POSTs get 202,
// anything but POST gets 405. It validates no headers: Mcp-Method / Mcp-Name checks are
// the HTTP transport's job, so scenarios that probe them fail here.
//
//   node conformance/modern-stdio-bridge.mjs PORT -- CMD [ARGS...]
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';

const args = process.argv.slice(2);
const port = Number(args[0]);
const cmd = args.slice(args.indexOf('--') + 1);
const child = spawn(cmd[0], cmd.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
child.on('exit', (code) => process.exit(code ?? 1));
const waiting = new Map();
let next = 0;
createInterface({ input: child.stdout }).on('line', (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { return; }
  if (msg.id === undefined || !waiting.has(msg.id)) return;
  const resolve = waiting.get(msg.id);
  waiting.delete(msg.id);
  resolve(msg);
});
createServer((req, res) => {
  if (req.method !== 'POST') { res.writeHead(405).end(); return; }
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    let msg;
    try { msg = JSON.parse(body); } catch {
      res.writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
      return;
    }
    if (msg.id === undefined) { child.stdin.write(JSON.stringify(msg) + '\n'); res.writeHead(202).end(); return; }
    const original = msg.id;
    const id = `bridge-${next++}`;
    waiting.set(id, (reply) => {
      reply.id = original;
      const code = reply.error?.code;
      const status = code === -32601 ? 404 : [-32020, -32021, -32022].includes(code) ? 400 : 200;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
    });
    res.on('close', () => waiting.delete(id));
    child.stdin.write(JSON.stringify({ ...msg, id }) + '\n');
  });
}).listen(port, '127.0.0.1');
