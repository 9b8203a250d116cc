// hack/npm-manifest.js — package.json work for hack/npm.sh, read from the
// main package's manifest (npm/garra-mcp/package.json), the one list of
// platforms:
//
//   node hack/npm-manifest.js platforms MAIN              the os-cpu of every platform package
//   node hack/npm-manifest.js stamp MAIN VERSION          set the version and every optional dependency's
//   node hack/npm-manifest.js platform MAIN OS-CPU DIR    write DIR/package.json of that platform's package
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const [cmd, mainPath, ...rest] = process.argv.slice(2);
const main = JSON.parse(fs.readFileSync(mainPath, 'utf8'));
const prefix = `${main.name}-`;

switch (cmd) {
  case 'platforms':
    console.log(Object.keys(main.optionalDependencies).map((p) => p.slice(prefix.length)).join(' '));
    break;
  case 'stamp': {
    const [version] = rest;
    main.version = version;
    for (const p of Object.keys(main.optionalDependencies)) {
      main.optionalDependencies[p] = version;
    }
    fs.writeFileSync(mainPath, `${JSON.stringify(main, null, 2)}\n`);
    break;
  }
  case 'platform': {
    const [platform, dir] = rest;
    const [os, cpu] = platform.split('-');
    const pkg = {
      name: prefix + platform,
      version: main.version,
      description: `The garra binary for ${os} ${cpu}, started by ${main.name}.`,
      homepage: main.homepage,
      repository: main.repository,
      os: [os],
      cpu: [cpu],
      files: ['bin/'],
      preferUnplugged: true,
    };
    fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
    break;
  }
  default:
    console.error(`npm-manifest: unknown command ${cmd}`);
    process.exit(2);
}
