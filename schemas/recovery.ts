import { Type } from '@sinclair/typebox'
import { Text } from './common.js'
import { Email, Password } from './user.js'

/** A token mailed in a link: what the front end reads from the link's `token` parameter. */
const MailedToken = () => Text({ minLength: 1, maxLength: 256, examples: ['Gk2VbXN0sQ8pYl1r8dJx4w7uZq3mTf6aHcE9oKj2LsU'] })

export const ForgotPasswordSchema = Type.Object({ email: Email() }, { additionalProperties: false })

export const ResetPasswordSchema = (passwordMinLength: number) => Type.Object({
  token: MailedToken(),
  new_password: Password(passwordMinLength)
}, { additionalProperties: false })

export const VerifySchema = Type.Object({ token: MailedToken() }, { additionalProperties: false })

export const NoticeSchema = Type.Object({
  detail: Type.String({ examples: ['If an active account has this email, a link to reset its password has been sent to it'] })
}, { $id: 'Notice', title: 'Notice', description: 'What the server did, in a sentence' })
