// The process `plinth openapi --app` runs the host's module in. Its stdout is the command's stderr, so that
// whatever the host writes there (a pino logger on fd 1, a transport's worker, console.log) never mixes with
// the document, which goes back to the command over IPC.
import { rootMessage } from './command.js'
import type { Rewrite } from './host-app.js'
import { noDatabase } from './no-database.js'

/** What the command gets back: the document, or the message of the error that stopped the app. */
export type AppDocumentAnswer = { document: object } | { error: string }

// Run for the document alone, a host app's boot must neither reach a database nor create anything.
const offline = (database: Awaited<ReturnType<typeof noDatabase>>): Record<string, Rewrite> => ({
  'plinth-db': { options: () => ({ client: database, migrate: false }) },
  'plinth-resource': { options: (options) => ({ ...options, createTable: false }) },
  'plinth-accounts': { options: (options) => ({ ...options, firstSuperuser: undefined }) }
})

async function appDocument (path: string): Promise<object> {
  const { hostApp } = await import('./host-app.js')
  const app = await hostApp(path, offline(await noDatabase()))
  try {
    if (typeof app.swagger !== 'function') throw new Error(`--app ${path}: the app has no OpenAPI document: register docsPlugin (or @fastify/swagger) in buildApp`)
    return app.swagger()
  } finally {
    await app.close()
  }
}

const answer: AppDocumentAnswer = await appDocument(process.argv[2] ?? '').then(
  (document) => ({ document }),
  (error: unknown) => ({ error: rootMessage(error) })
)
process.send!(answer, () => process.disconnect())
