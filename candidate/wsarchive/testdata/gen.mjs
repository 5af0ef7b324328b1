// gen.mjs writes the golden workspace archives of candidate/wsarchive with
// the tar library and entry options of the reference runtime (see README.md).
//
//   mkdir -p /tmp/wsarchive-ref && cd /tmp/wsarchive-ref
//   npm init -y && npm install tar-stream@3.2.1
//   node /path/to/candidate/wsarchive/testdata/gen.mjs /path/to/candidate/wsarchive/testdata
//
// It resolves tar-stream from the current directory and refuses any version
// other than the one the reference pins.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'

const require = createRequire(join(process.cwd(), 'noop.js'))
const tarMain = require.resolve('tar-stream')
const tarVersion = JSON.parse(readFileSync(join(tarMain, '..', 'package.json'), 'utf8')).version
if (tarVersion !== '3.2.1') throw new Error(`want tar-stream 3.2.1, found ${tarVersion}`)
const { pack } = require('tar-stream')

const out = process.argv[2]
if (!out) throw new Error('usage: node gen.mjs OUTDIR')
mkdirSync(join(out, 'golden'), { recursive: true })

// pattern returns n deterministic bytes: byte i is (i*31 + 7) mod 256.
function pattern(n) {
  const b = Buffer.alloc(n)
  for (let i = 0; i < n; i++) b[i] = (i * 31 + 7) & 0xff
  return b
}

function content(spec) {
  if ('text' in spec) return Buffer.from(spec.text, 'utf8')
  if ('pattern' in spec) return pattern(spec.pattern)
  throw new Error('bad content spec')
}

function sha256(b) {
  return 'sha256:' + createHash('sha256').update(b).digest('hex')
}

async function entry(archive, name, mode, bytes) {
  await new Promise((resolve, reject) => {
    archive.entry(
      { name, mode, uid: 0, gid: 0, size: bytes.byteLength, mtime: new Date(0), type: 'file', uname: '', gname: '' },
      bytes,
      (err) => (err ? reject(err) : resolve()),
    )
  })
}

async function encode(files, repo) {
  const archive = pack()
  const chunks = []
  const done = (async () => {
    for await (const c of archive) chunks.push(Buffer.from(c))
  })()
  for (const f of files) await entry(archive, 'workspace/' + f.path, f.mode, content(f))
  if (repo) {
    const bundle = content(repo.bundle)
    // RFC 8785 bytes: members in code-unit order, no whitespace; every
    // value here is ASCII hex or an integer, so no escaping is involved.
    const meta =
      `{"bundle":{"byteLength":${bundle.byteLength},"sha256":"${sha256(bundle)}"},` +
      `"headCommit":"${repo.headCommit}","headTree":"${repo.headTree}",` +
      `"kind":"agent-candidate-workspace-archive"}`
    await entry(archive, 'metadata/repository.json', 0o600, Buffer.from(meta, 'utf8'))
    await entry(archive, 'metadata/repository.bundle', 0o600, bundle)
  }
  archive.finalize()
  await done
  return Buffer.concat(chunks)
}

const a = (n, c = 'a') => c.repeat(n)
const sha1A = 'a'.repeat(40)
const sha1B = 'b'.repeat(40)
const sha256A = '0123456789abcdef'.repeat(4)
const sha256B = 'fedcba9876543210'.repeat(4)
const bundleText = { text: '# v2 git bundle\n' + sha1A + ' HEAD\n\nPACK-not-a-real-pack\n' }

// Entry names are "workspace/" (10 bytes) + path. USTAR holds a 100-byte
// name plus a 155-byte prefix split at a slash; the rest needs PAX.
const cases = [
  { name: 'empty', files: [] },
  {
    name: 'short',
    files: [
      { path: 'README.md', mode: 0o644, text: 'hello\n' },
      { path: 'bin/run.sh', mode: 0o755, text: '#!/bin/sh\necho hi\n' },
      { path: 'empty.txt', mode: 0o644, text: '' },
      { path: 'secret.txt', mode: 0o600, text: 'not really\n' },
      { path: 'src/a/b/c.go', mode: 0o644, text: 'package c\n' },
    ],
  },
  { name: 'mode-zero', files: [{ path: 'x', mode: 0, text: 'mode zero\n' }] },
  { name: 'mode-odd', files: [{ path: 'a', mode: 0o777, text: '' }, { path: 'b', mode: 0o001, text: 'b' }, { path: 'c', mode: 0o640, text: 'c' }] },
  { name: 'sizes', files: [511, 512, 513, 1024, 65537].map((n) => ({ path: `f${String(n).padStart(5, "0")}`, mode: 0o644, pattern: n })) },
  { name: 'path-90', files: [{ path: a(90), mode: 0o644, text: 'entry name of exactly 100 bytes\n' }] },
  { name: 'path-91', files: [{ path: a(91), mode: 0o644, text: 'prefix workspace, name 91\n' }] },
  { name: 'path-100', files: [{ path: a(100), mode: 0o644, text: 'prefix workspace, name 100\n' }] },
  { name: 'path-101-flat', files: [{ path: a(101), mode: 0o644, text: 'name 101 without a slash: pax\n' }] },
  { name: 'path-101-split', files: [{ path: 'd/' + a(99), mode: 0o644, text: 'prefix workspace/d\n' }] },
  { name: 'path-prefix-154', files: [{ path: a(144) + '/' + a(100), mode: 0o644, text: 'prefix 154, name 100\n' }] },
  { name: 'path-prefix-155', files: [{ path: a(145) + '/' + a(100), mode: 0o644, text: 'prefix 155, name 100\n' }] },
  { name: 'path-prefix-156', files: [{ path: a(146) + '/' + a(100), mode: 0o644, text: 'prefix 156: pax\n' }] },
  { name: 'path-multi-split', files: [{ path: a(70) + '/' + a(73) + '/' + a(30) + '/' + a(69), mode: 0o644, text: 'split at a later slash\n' }] },
  { name: 'path-256', files: [{ path: a(100) + '/' + a(54) + '/' + a(100), mode: 0o644, text: '256\n' }] },
  { name: 'path-4096', files: [{ path: Array.from({ length: 16 }, () => a(255)).join('/'), mode: 0o755, text: '4096\n' }] },
  { name: 'path-4096-flat', files: [{ path: a(4096, 'z'), mode: 0o644, text: 'one component\n' }] },
  {
    name: 'pax-record-digits',
    files: [
      // The record " path=workspace/<p>\n" is 17 + len(p) bytes before its
      // decimal length prefix: 80, 81 and 82-byte paths straddle the
      // two-to-three digit step, 980, 981 and 982 the three-to-four one.
      { path: 'a' + a(77) + '\u00e9', mode: 0o644, text: '1' },
      { path: 'b' + a(78) + '\u00e9', mode: 0o644, text: '2' },
      { path: 'c' + a(79) + '\u00e9', mode: 0o644, text: '3' },
      { path: 'e/' + Array.from({ length: 8 }, () => a(120)).join('/') + '/' + a(10), mode: 0o644, text: '4' },
      { path: 'f/' + Array.from({ length: 8 }, () => a(120)).join('/') + '/' + a(11), mode: 0o644, text: '5' },
      { path: 'g/' + Array.from({ length: 8 }, () => a(120)).join('/') + '/' + a(12), mode: 0o644, text: '6' },
    ],
  },
  {
    name: 'unicode',
    files: [
      { path: 'caf\u00e9/h\u00e9llo.txt', mode: 0o644, text: 'accents\n' },
      { path: '\u65e5\u672c/\u8a9e.md', mode: 0o644, text: 'cjk\n' },
      // UTF-16 order puts the supplementary U+1F600 before U+E000.
      { path: '\u{1F600}.txt', mode: 0o644, text: 'emoji\n' },
      { path: '\ue000.txt', mode: 0o600, text: 'private use\n' },
    ],
  },
  { name: 'repo-sha1', files: [{ path: 'main.go', mode: 0o644, text: 'package main\n' }], repo: { headCommit: sha1A, headTree: sha1B, bundle: bundleText } },
  { name: 'repo-sha256', files: [{ path: 'x/y', mode: 0o755, text: 'y' }], repo: { headCommit: sha256A, headTree: sha256B, bundle: { pattern: 700 } } },
  { name: 'repo-no-files', files: [], repo: { headCommit: sha1A, headTree: sha1B, bundle: { text: 'b' } } },
]

const index = []
for (const c of cases) {
  // The reference requires strictly ascending paths in UTF-16 code-unit
  // order, JavaScript's default string comparison.
  for (let i = 1; i < c.files.length; i++) {
    if (!(c.files[i - 1].path < c.files[i].path)) throw new Error(`case ${c.name}: paths out of order`)
  }
  const bytes = await encode(c.files, c.repo)
  writeFileSync(join(out, 'golden', `${c.name}.tar`), bytes)
  index.push({ ...c, sha256: sha256(bytes), byteLength: bytes.byteLength })
}
writeFileSync(join(out, 'golden', 'cases.json'), JSON.stringify({ tarStream: tarVersion, cases: index }, null, 1) + '\n')
console.log(`wrote ${index.length} cases with tar-stream ${tarVersion}`)
