import { DOCS, type Command } from './command.js'

export const secret: Command = {
  words: ['generate'],
  synopsis: 'generate',
  summary: 'print a new SECRET_KEY: 32 random bytes, base64url',
  description: 'Prints 32 random bytes from the system\'s secure source, base64url-encoded on one line, for\n' +
    'SECRET_KEY, which must hold at least 32 bytes. It opens no database.',
  notes: 'Keep the output secret, and give every process of one database the same key: a new key ends\n' +
    `every HS256 token signed with the old one. See ${DOCS}/configuration.md`,
  options: {},
  run: generateSecret
}

async function generateSecret () {
  const { randomBytes } = await import('node:crypto')
  process.stdout.write(`${randomBytes(32).toString('base64url')}\n`)
}
