// The ACX Exchange's one script (docs/spec/acx-registry.md §10; lboel/acx@85f1358 SPEC.md §17.6).
// It loads nothing from elsewhere and sends nothing anywhere: it filters the listing, and on a
// detail page it fetches the artifact's bytes from this site and checks them with WebCrypto.
//
// What a verdict may say (§17.6): for a workflow or Agent Graph, that its RFC 8785 digest and its
// Ed25519 DSSE/in-toto signature hold under the key the file carries (a valid unknown signer is
// "portable", never "trusted"); for a cartridge or a template, only that the downloaded bytes are
// the bytes this Exchange recorded, which is not a verification of the cartridge.
"use strict";

(function () {
  const text = new TextEncoder();

  // RFC 8785 (JCS): ECMAScript's own JSON serialisation of numbers and strings, object members
  // sorted by UTF-16 code units, no whitespace. I-JSON values only (finite numbers).
  function jcs(value) {
    if (value === null || typeof value === "boolean") return JSON.stringify(value);
    if (typeof value === "number") {
      if (!Number.isFinite(value)) throw new Error("a JSON number that is not finite");
      return JSON.stringify(value);
    }
    if (typeof value === "string") return JSON.stringify(value);
    if (Array.isArray(value)) return "[" + value.map(jcs).join(",") + "]";
    if (typeof value === "object") {
      const keys = Object.keys(value).sort();
      return "{" + keys.map((k) => JSON.stringify(k) + ":" + jcs(value[k])).join(",") + "}";
    }
    throw new Error("not a JSON value");
  }

  function hex(buffer) {
    return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  async function sha256(bytes) {
    return "sha256:" + hex(await crypto.subtle.digest("SHA-256", bytes));
  }

  function base64(textValue) {
    if (typeof textValue !== "string" || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(textValue)) {
      throw new Error("not base64");
    }
    const standard = textValue.replace(/-/g, "+").replace(/_/g, "/");
    const padded = standard + "=".repeat((4 - (standard.length % 4)) % 4);
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  }

  function pemToDer(pem) {
    const match = /^-----BEGIN PUBLIC KEY-----\s*([A-Za-z0-9+/=\s]+?)\s*-----END PUBLIC KEY-----\s*$/.exec(pem || "");
    if (!match) throw new Error("publicKeyPem is not an SPKI public key");
    return base64(match[1].replace(/\s+/g, ""));
  }

  function pae(payloadType, payload) {
    const type = text.encode(payloadType);
    const head = text.encode(`DSSEv1 ${type.length} ${payloadType} ${payload.length} `);
    const out = new Uint8Array(head.length + payload.length);
    out.set(head, 0);
    out.set(payload, head.length);
    return out;
  }

  const KINDS = {
    workflow: {
      subject: "urn:acx:workflow:",
      predicateType: "https://acx.dev/attestation/workflow/v1",
      schema: "acx.workflow-signature/1",
      members: ["workflowId", "workflowVersion", "workflowDigest"],
      counts: { participants: "participants", nodes: "nodes" },
    },
    "agent-graph": {
      subject: "urn:acx:agent-graph:",
      predicateType: "https://acx.dev/attestation/agent-graph/v1",
      schema: "acx.agent-graph-signature/1",
      members: ["agentGraphId", "agentGraphVersion", "agentGraphDigest"],
      counts: { actors: "actors", knowledgeModules: "knowledge", routes: "routes", loops: "loops", convergencePoints: "convergence" },
    },
  };

  function sameMembers(object, names) {
    return object !== null && typeof object === "object" && !Array.isArray(object) &&
      JSON.stringify(Object.keys(object).sort()) === JSON.stringify([...names].sort());
  }

  // Every binding of §14.5 / §16.8, recomputed here; throws the first that fails.
  async function verifySigned(kind, bytes, expectedDigest) {
    const spec = KINDS[kind];
    const document = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    if (document === null || typeof document !== "object" || Array.isArray(document)) throw new Error("not a JSON object");
    const integrity = document.integrity;
    if (!sameMembers(integrity, ["schemaVersion", "digest", "publisherId", "keyid", "publicKeyPem", "signedAt", "envelope"])) {
      throw new Error("no complete integrity block: the document is not signed");
    }
    if (integrity.schemaVersion !== spec.schema) throw new Error(`integrity.schemaVersion is not ${spec.schema}`);
    const body = Object.assign({}, document);
    delete body.integrity;
    const digest = await sha256(text.encode(jcs(body)));
    if (digest !== integrity.digest) throw new Error(`the RFC 8785 digest is ${digest}, not the signed ${integrity.digest}`);
    if (digest !== expectedDigest) throw new Error(`the RFC 8785 digest is ${digest}, not the ${expectedDigest} the registry index records`);
    const der = pemToDer(integrity.publicKeyPem);
    const keyid = "ed25519:" + hex(await crypto.subtle.digest("SHA-256", der));
    if (keyid !== integrity.keyid) throw new Error(`integrity.keyid is not the id of publicKeyPem (${keyid})`);
    const envelope = integrity.envelope;
    if (!sameMembers(envelope, ["payloadType", "payload", "signatures"]) || !Array.isArray(envelope.signatures) ||
        envelope.signatures.length !== 1 || !sameMembers(envelope.signatures[0], ["keyid", "sig"])) {
      throw new Error("the DSSE envelope is not exactly payloadType, payload and one signature");
    }
    if (envelope.payloadType !== "application/vnd.in-toto+json") throw new Error("the DSSE payloadType is not in-toto");
    if (envelope.signatures[0].keyid !== keyid) throw new Error("the DSSE signature names another key");
    const payload = base64(envelope.payload);
    let key;
    try {
      key = await crypto.subtle.importKey("spki", der, { name: "Ed25519" }, false, ["verify"]);
    } catch (error) {
      throw new Error("this browser's WebCrypto has no Ed25519, so the signature could not be checked here");
    }
    const holds = await crypto.subtle.verify({ name: "Ed25519" }, key, base64(envelope.signatures[0].sig), pae(envelope.payloadType, payload));
    if (!holds) throw new Error("the Ed25519 signature does not verify over the DSSE payload");
    const statement = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(payload));
    const predicate = statement.predicate || {};
    const subject = Array.isArray(statement.subject) && statement.subject.length === 1 ? statement.subject[0] : {};
    const checks = [
      [statement._type === "https://in-toto.io/Statement/v1", "the Statement type is not in-toto v1"],
      [subject.name === `${spec.subject}${document.id}@${document.version || "unversioned"}`, "the Statement subject names another artifact"],
      [subject.digest && subject.digest.sha256 === digest.slice(7), "the Statement subject is another digest"],
      [statement.predicateType === spec.predicateType, "the predicateType is wrong"],
      [predicate.acxSchemaVersion === document.schemaVersion, "the predicate binds another schemaVersion"],
      [predicate[spec.members[0]] === document.id, "the predicate binds another id"],
      [(predicate[spec.members[1]] ?? null) === (document.version ?? null), "the predicate binds another version"],
      [predicate[spec.members[2]] === digest, "the predicate binds another digest"],
      [predicate.publisherId === integrity.publisherId, "the predicate binds another publisher"],
      [predicate.signedAt === integrity.signedAt, "the predicate binds another signing time"],
    ];
    for (const [member, array] of Object.entries(spec.counts)) {
      const length = Array.isArray(document[array]) ? document[array].length : 0;
      checks.push([predicate[member] === length, `the predicate's ${member} count is not ${length}`]);
    }
    for (const [holdsCheck, message] of checks) if (!holdsCheck) throw new Error(message);
    return { digest, keyid, publisher: integrity.publisherId, signedAt: integrity.signedAt };
  }

  function render(panel, state, title, lines) {
    panel.dataset.state = state;
    const heading = panel.querySelector(".verdict-title");
    const list = panel.querySelector(".verdict-lines");
    heading.textContent = title;
    list.replaceChildren(...lines.map((line) => {
      const item = document.createElement("li");
      item.textContent = line;
      return item;
    }));
  }

  async function verifyPanel(panel) {
    const kind = panel.dataset.kind;
    const expectedBytes = panel.dataset.fileDigest;
    render(panel, "running", "Checking…", ["Fetching the artifact's bytes from this site."]);
    let bytes;
    try {
      const response = await fetch(panel.dataset.src, { cache: "no-store" });
      if (!response.ok) throw new Error(`the download answered ${response.status}`);
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      render(panel, "failed", "Failed: the artifact could not be fetched", [String(error.message || error)]);
      return;
    }
    const got = await sha256(bytes);
    const sameBytes = got === expectedBytes;
    if (kind === "workflow" || kind === "agent-graph") {
      try {
        const result = await verifySigned(kind, bytes, panel.dataset.digest);
        const lines = [
          `Proved here: the ${kind === "workflow" ? "workflow" : "Agent Graph"}'s RFC 8785 digest is ${result.digest}, as signed and as the registry index records.`,
          `Proved here: the Ed25519 DSSE/in-toto signature holds under the key the file carries (${result.keyid}), binding the publisher claim ${result.publisher} and the signing time ${result.signedAt}.`,
          "Not proved here: that this key belongs to " + result.publisher + ". No trust registry or namespace proof (DNS-TXT, GitHub OIDC) was checked in this browser, so the signer is portable, not trusted.",
          "Not proved here: that it is safe to run, that any agent it names is available, or that it grants any permission. Repeat the check with the CLI before you use it.",
        ];
        if (panel.dataset.registryTrust === "trusted" || panel.dataset.registryTrust === "local") {
          lines.splice(2, 1, "The registry build found this key in its trust registry with a namespace proof (trusted); this browser did not re-check that.");
        }
        if (!sameBytes) lines.push(`Note: the file's bytes (${got}) are not byte for byte the ones this Exchange copied, though they still canonicalise to the signed digest.`);
        render(panel, "portable", "Signature verified in this browser: portable", lines);
      } catch (error) {
        render(panel, "failed", "Failed: do not use these bytes", [
          String(error.message || error),
          sameBytes ? "The bytes are the ones this Exchange copied, but they do not verify." : `The file's SHA-256 is ${got}, not the ${expectedBytes} this Exchange recorded when it was built.`,
        ]);
      }
      return;
    }
    const what = kind === "agent" ? "cartridge" : "template file";
    if (!sameBytes) {
      render(panel, "failed", `Failed: the ${what} is not the one this Exchange recorded`, [
        `The file's SHA-256 is ${got}, not the ${expectedBytes} recorded when this Exchange was built. Do not use it.`,
      ]);
      return;
    }
    const lines = [`Checked here: the download's SHA-256 is ${got}, the digest this Exchange recorded when it was built.`];
    if (kind === "agent") {
      lines.push(
        "Not verified in this browser: the cartridge itself. A matching download digest says nothing about its ROM manifest, its DSSE signature, its package spec, its level or its capabilities.",
        "Verify it on your machine before you load it: engram cartridge verify and engram cartridge spec (commands below).",
      );
    } else {
      lines.push("Templates are unsigned editable sources: inspect every file and export it under your own publisher id.");
    }
    render(panel, "download-only", "Download digest matches; not a verification", lines);
  }

  function filterListing() {
    const search = document.getElementById("search");
    const kinds = document.querySelectorAll("input[name=kind]");
    const cards = document.querySelectorAll(".card[data-search]");
    const count = document.getElementById("shown");
    if (!search) return;
    const apply = () => {
      const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      const wanted = new Set(Array.from(kinds).filter((k) => k.checked).map((k) => k.value));
      let shown = 0;
      for (const card of cards) {
        const hit = wanted.has(card.dataset.kind) && words.every((w) => card.dataset.search.includes(w));
        card.hidden = !hit;
        if (hit) shown += 1;
      }
      if (count) count.textContent = `${shown} of ${cards.length}`;
    };
    search.form.addEventListener("submit", (event) => event.preventDefault());
    search.addEventListener("input", apply);
    for (const k of kinds) k.addEventListener("change", apply);
    document.getElementById("filters").hidden = false;
    apply();
  }

  window.acxExchange = { jcs, sha256 };
  document.addEventListener("DOMContentLoaded", () => {
    filterListing();
    for (const panel of document.querySelectorAll(".verify[data-src]")) {
      const button = panel.querySelector("button");
      if (button) {
        button.hidden = false;
        button.addEventListener("click", () => verifyPanel(panel));
      }
      verifyPanel(panel);
    }
  });
})();
