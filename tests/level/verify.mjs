// An independent verifier for engram's level credentials: Digital Bazaar's VC 2.0 stack
// (@digitalbazaar/vc 7, data-integrity + eddsa-jcs-2022, vc-bitstring-status-list), none of
// engram's code. Usage: node verify.mjs CASE.json, where CASE.json is
// {credential, verificationMethod, publicKeyMultibase, statusList}; prints one JSON line
// {verified, errors, statusResult}. Every document the library asks for is served from memory
// (no network): the contexts, the issuer's did:web document and key, and the status list.
import {readFileSync} from 'node:fs';
import * as vc from '@digitalbazaar/vc';
import {DataIntegrityProof} from '@digitalbazaar/data-integrity';
import {createVerifyCryptosuite} from '@digitalbazaar/eddsa-jcs-2022-cryptosuite';
import {checkStatus} from '@digitalbazaar/vc-bitstring-status-list';
import {contexts as credentialContexts} from '@digitalbazaar/credentials-context';
import multikeyContext from '@digitalbazaar/multikey-context';

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const here = new URL('.', import.meta.url);
const documents = new Map(credentialContexts);
documents.set(multikeyContext.CONTEXT_URL, multikeyContext.CONTEXT);
documents.set('https://purl.imsglobal.org/spec/ob/v3p0/context-3.0.3.json',
  JSON.parse(readFileSync(new URL('../vectors/openbadges-3.0/context-3.0.3.json', here))));
documents.set('https://acx.dev/ns/level/v1',
  JSON.parse(readFileSync(new URL('../../src/engram/level/_schemas/acx-level-v1.context.jsonld', here))));

const method = input.verificationMethod;
const controller = method.split('#')[0];
const key = {
  '@context': multikeyContext.CONTEXT_URL,
  id: method,
  type: 'Multikey',
  controller,
  publicKeyMultibase: input.publicKeyMultibase,
};
documents.set(method, key);
documents.set(controller, {
  '@context': ['https://www.w3.org/ns/did/v1', multikeyContext.CONTEXT_URL],
  id: controller,
  verificationMethod: [key],
  assertionMethod: [method],
});
if(input.statusList) {
  documents.set(input.statusList.id, input.statusList);
}

async function documentLoader(url) {
  const bare = url.split('#')[0];
  const document = documents.get(url) ?? (url.startsWith('did:') ? documents.get(bare) : undefined);
  if(document === undefined) {
    throw new Error(`document not served here: ${url}`);
  }
  return {contextUrl: null, documentUrl: url, document};
}

const suite = new DataIntegrityProof({cryptosuite: createVerifyCryptosuite()});
const result = await vc.verifyCredential({
  credential: input.credential, suite, documentLoader, checkStatus,
});
const errors = [];
const collect = error => {
  if(!error) return;
  for(const e of (error.errors ?? [error])) errors.push(String(e.message ?? e));
};
collect(result.error);
for(const r of result.results ?? []) collect(r.error);
console.log(JSON.stringify({
  verified: result.verified,
  errors,
  statusResult: result.statusResult ?? null,
}));
