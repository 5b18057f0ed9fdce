// npm's `prepare` (npm ci, npm install, a git dependency): builds dist/ when TypeScript is installed.
// A production install (npm ci --omit=dev) has no TypeScript: it keeps the dist/ built beforehand.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'

// npm pack and npm publish run `prepack` (a fresh build) just before `prepare`.
if (['pack', 'publish'].includes(process.env.npm_command ?? '')) process.exit(0)

let typescript = true
try {
  createRequire(import.meta.url).resolve('typescript/package.json')
} catch {
  typescript = false
}

if (typescript) {
  const npm = process.env.npm_execpath
  const build = npm
    ? spawnSync(process.execPath, [npm, 'run', 'build'], { stdio: 'inherit' })
    : spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' })
  if (build.error) console.error(`plinth: cannot run npm run build: ${build.error.message}`)
  process.exit(build.status ?? 1)
}

const root = new URL('../', import.meta.url)
const built = ['dist/index.js', 'dist/server.js', 'dist/cli.js', 'dist/db/migrations/meta/_journal.json']
  .every((file) => existsSync(new URL(file, root)))
if (built) {
  console.log('plinth: TypeScript is not installed (production install): using the dist/ already built')
} else {
  console.error('plinth: dist/ is not built and TypeScript is not installed: build first where dev dependencies are installed (npm ci && npm run build)')
  process.exit(1)
}
