import { spawn } from 'node:child_process'
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AppDocumentAnswer } from './app-document.js'
import { APP, DOCS, readConfig, readFiles, type Command } from './command.js'
import { noDatabase } from './no-database.js'

export const openapi: Command = {
  synopsis: '[--app MODULE]',
  summary: 'print the OpenAPI 3.1 document as JSON, without a database',
  description: 'Prints the OpenAPI 3.1 document the server serves at /docs/json, as JSON on stdout. With\n' +
    '--app, prints a host app\'s own document instead: its routes and resources beside plinth\'s. It\n' +
    'opens no database: plinth\'s plugins are given none, and create no table. The app runs in a\n' +
    'child process whose stdout is this command\'s stderr: its logs never mix with the document.',
  notes: 'Environment: RESOURCES, RESOURCES_FILE, and the limits the document states (DEFAULT_PAGE_LIMIT,\n' +
    'MAX_PAGE_LIMIT, PASSWORD_MIN_LENGTH...); with --app, the app\'s own settings.\n\n' +
    'A typed client: npx openapi-typescript openapi.json -o api.d.ts, then openapi-fetch; see\n' +
    `${DOCS}/plugins.md#the-typed-client`,
  options: { app: APP },
  run: (values) => typeof values.app === 'string' ? printAppOpenapi(values.app) : printOpenapi()
}

async function printOpenapi () {
  const config = await readConfig()
  const files = await readFiles(config)
  const { buildApp } = await import('../app.js')
  const app = await buildApp({ ...config, CREATE_TABLES_ON_STARTUP: false, FIRST_SUPERUSER_EMAIL: undefined }, { logger: false, database: await noDatabase(), files })
  try {
    await app.ready()
    process.stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`)
  } finally {
    await app.close()
  }
}

// The host's module runs in a process of its own, whose stdout is this one's stderr: only the document reaches stdout.
const APP_DOCUMENT = fileURLToPath(new URL(`./app-document${extname(import.meta.url)}`, import.meta.url))

async function printAppOpenapi (path: string) {
  // Its loader (TypeScript under test) carries over; a debugger's port would clash.
  const execArgv = process.execArgv.filter((arg) => !arg.startsWith('--inspect'))
  const child = spawn(process.execPath, [...execArgv, APP_DOCUMENT, path], { stdio: ['ignore', 2, 2, 'ipc'] })
  const answer = await new Promise<AppDocumentAnswer>((resolve, reject) => {
    child.once('message', (message) => resolve(message as AppDocumentAnswer))
    child.once('error', reject)
    child.once('exit', (code, signal) => reject(new Error(`--app ${path}: the app's process ended (${signal ?? `exit code ${code}`}) before it gave its document`)))
  })
  if ('error' in answer) throw new Error(answer.error)
  process.stdout.write(`${JSON.stringify(answer.document, null, 2)}\n`)
}
