import { DOCS, type Command } from './command.js'

export const serve: Command = {
  synopsis: '',
  summary: 'run the HTTP server, as npm start does',
  description: 'Runs the HTTP server until SIGINT or SIGTERM, then closes it gracefully, as npm start does\n' +
    `(without its V8 flags: see ${DOCS}/operations.md).`,
  notes: `Environment: HOST, PORT and DATABASE_URL above all, and every setting of\n${DOCS}/configuration.md`,
  options: {},
  run: async () => { await import('../server.js') }
}
