import type { TSchema } from '@sinclair/typebox'
import type { Config } from '../config.js'
import type { Database } from '../db/client.js'
import { readConfig, UsageError, type Values } from './command.js'
import { readPassword } from './password-prompt.js'

// What create-user and create-superuser share: every input checked as the API checks it, before any database is opened.

/** Why `value` fails `schema` as the API's validator words it, or undefined when it passes. */
export async function refusal (field: string, schema: TSchema, value: string): Promise<string | undefined> {
  const { Type } = await import('@sinclair/typebox')
  const { validatorCompiler } = await import('../http/validation.js')
  const validate = validatorCompiler({ schema: Type.Object({ [field]: schema }), method: 'POST', url: '', httpPart: 'body' })
  if (validate({ [field]: value }) === true) return undefined
  return validate.errors?.[0]?.message ?? 'refused'
}

async function check (field: string, schema: TSchema, value: string, hint = '') {
  const reason = await refusal(field, schema, value)
  if (reason !== undefined) throw new UsageError(`invalid ${field}: ${reason}${hint}`)
}

export async function accountEmail (name: string, email: Values[string], usage: string) {
  if (typeof email !== 'string') throw new UsageError(`${name} needs --email EMAIL`, usage)
  const config = await readConfig()
  const { Email } = await import('../schemas/user.js')
  await check('email', Email(), email)
  return { config, email }
}

export async function hashedPassword (config: Config) {
  const password = await readPassword()
  const { Password } = await import('../schemas/user.js')
  await check('password', Password(config.PASSWORD_MIN_LENGTH), password, ` (PASSWORD_MIN_LENGTH is ${config.PASSWORD_MIN_LENGTH})`)
  const { hashPassword } = await import('../plugins/auth/passwords.js')
  return hashPassword(password)
}

/** The database of DATABASE_URL, migrated first when CREATE_TABLES_ON_STARTUP, closed once `use` is done. */
export async function withDatabase (config: Config, use: (db: Database) => Promise<void>) {
  const { connect } = await import('../db/client.js')
  const client = await connect(config.DATABASE_URL, { poolMode: config.DATABASE_POOL_MODE })
  try {
    if (config.CREATE_TABLES_ON_STARTUP) await client.migrate()
    await use(client.db)
  } finally {
    await client.close()
  }
}
