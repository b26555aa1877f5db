// An independent verifier for signed ACX workflows and Agent Graphs (SPEC §14.5, §16.8), used by
// tests/workflow and tests/graph. It shares no code with engram: npm `canonicalize` (RFC 8785,
// by one of its authors) computes the digest, Node's WebCrypto verifies the Ed25519 signature
// over the DSSE pre-authentication encoding, and the Statement bindings are read back here.
// Usage: node verify_acx_json.mjs <file.json> <workflow|agent-graph>; prints one JSON object.
import { readFileSync } from 'node:fs'
import { createHash, webcrypto } from 'node:crypto'
import canonicalize from 'canonicalize'

const [file, kind] = process.argv.slice(2)
const document = JSON.parse(readFileSync(file, 'utf8'))
const { integrity, ...body } = document
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')
const digest = 'sha256:' + sha256(Buffer.from(canonicalize(body), 'utf8'))

const der = Buffer.from(integrity.publicKeyPem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, ''), 'base64')
const key = await webcrypto.subtle.importKey('spki', der, { name: 'Ed25519' }, false, ['verify'])
const { payloadType, payload, signatures } = integrity.envelope
// Buffer's base64 decoder takes the standard and the URL-safe alphabet alike.
const statementBytes = Buffer.from(payload, 'base64')
const typeBytes = Buffer.from(payloadType, 'utf8')
const pae = Buffer.concat([
  Buffer.from(`DSSEv1 ${typeBytes.length} `, 'utf8'), typeBytes,
  Buffer.from(` ${statementBytes.length} `, 'utf8'), statementBytes,
])
const signatureOk = await webcrypto.subtle.verify(
  { name: 'Ed25519' }, key, Buffer.from(signatures[0].sig, 'base64'), pae,
)
const statement = JSON.parse(statementBytes.toString('utf8'))
const predicate = statement.predicate
const prefix = kind === 'workflow' ? 'workflow' : 'agentGraph'
console.log(JSON.stringify({
  digest,
  integrityDigest: integrity.digest,
  keyid: 'ed25519:' + sha256(der),
  integrityKeyid: integrity.keyid,
  signatureKeyid: signatures[0].keyid,
  signatureOk,
  statementType: statement._type,
  subjects: statement.subject.length,
  subjectName: statement.subject[0].name,
  expectedSubject: `urn:acx:${kind}:${document.id}@${document.version}`,
  subjectDigest: 'sha256:' + statement.subject[0].digest.sha256,
  predicateType: statement.predicateType,
  predicateDigest: predicate[`${prefix}Digest`],
  predicateId: predicate[`${prefix}Id`],
  predicateVersion: predicate[`${prefix}Version`],
  publisherId: predicate.publisherId,
  integrityPublisherId: integrity.publisherId,
  signedAt: predicate.signedAt,
  integritySignedAt: integrity.signedAt,
  canonicalStatement: canonicalize(statement) === statementBytes.toString('utf8'),
}))
