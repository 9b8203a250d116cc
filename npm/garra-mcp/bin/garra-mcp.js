#!/usr/bin/env node
// garra-mcp starts the garra binary that came with this machine's platform
// package, @garraia/garra-mcp-<os>-<cpu>: an optional dependency that npm
// installs only where its os and cpu match, so nothing is downloaded from
// outside the registry. The binary gets this process's stdin, stdout and
// stderr (the MCP stdio transport) and its arguments, `mcp-server` when
// there are none; its exit code or signal becomes this process's.
'use strict';

const { spawn } = require('node:child_process');
const { constants } = require('node:os');
const { name, version, optionalDependencies } = require('../package.json');

function fail(message) {
  process.stderr.write(`garra-mcp: ${message}\n`);
  process.exit(1);
}

const platform = `${process.platform}-${process.arch}`;
const pkg = `${name}-${platform}`;
if (!Object.hasOwn(optionalDependencies, pkg)) {
  const built = Object.keys(optionalDependencies).map((p) => p.slice(name.length + 1));
  fail(`no garra binary is built for ${platform}; there are packages for ${built.join(', ')}`);
}

let bin;
try {
  bin = require.resolve(`${pkg}/bin/garra${process.platform === 'win32' ? '.exe' : ''}`);
} catch {
  // Several causes look the same from here: say them all, and what works.
  fail(`the package with this machine's garra binary, ${pkg}@${version}, is not installed. ` +
    'npm installs it as an optional dependency, and leaves it out without an error when it cannot be fetched ' +
    '(not published for this version, no network, a lockfile made on another platform) or when optional ' +
    `dependencies are omitted (--omit=optional). Install it by name: npm install ${pkg}@${version}; ` +
    'or build garra from source (make build) and run garra mcp-server');
}

const args = process.argv.slice(2);
const child = spawn(bin, args.length > 0 ? args : ['mcp-server'], { stdio: 'inherit', windowsHide: true });

// A host stops the server by closing stdin or by a signal to this process:
// pass the signal on and wait for garra to finish, rather than die first and
// leave it running.
const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
for (const sig of forwarded) {
  process.on(sig, () => child.kill(sig));
}

child.on('error', (err) => fail(`cannot start ${bin}: ${err.message}`));
child.on('exit', (code, signal) => {
  if (signal === null) {
    process.exit(code ?? 1);
  }
  // Die of the same signal, so the host sees what garra saw.
  for (const sig of forwarded) {
    process.removeAllListeners(sig);
  }
  process.kill(process.pid, signal);
  setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 0)), 1000);
});
