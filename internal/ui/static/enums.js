// The API's enumerations, read from its OpenAPI document (GET
// /openapi.json, served by the same controller and kept equal to its Go
// lists by a test): a provision state, fault or job state the API gains
// is counted, filtered and listed here without a change to the dashboard.
// (Its colour is style.css's, which a test of internal/ui checks covers
// every value.)
import { api } from './api.js';

export const enums = {
  provisionStates: [], // lifecycle order
  faults: [],
  powerStates: [],
  instanceStates: [],
  jobStates: [],
};

// FINISHED are the job states a job leaves no more (River's finalized
// states): "not finished" on the jobs page is every other state, so a
// state River gains is shown there.
export const FINISHED = ['completed', 'cancelled', 'discarded'];

let loading = null;

// loadEnums reads the document once per page load; later calls wait for
// the same answer. A failure is thrown to every caller and tried again
// on the next call.
export function loadEnums() {
  if (!loading) {
    loading = read().catch((e) => { loading = null; throw e; });
  }
  return loading;
}

async function read() {
  const doc = await api('GET', '/openapi.json');
  const schemas = (doc && doc.components && doc.components.schemas) || {};
  const values = (schema, prop) => {
    const p = schemas[schema] && schemas[schema].properties && schemas[schema].properties[prop];
    const v = p && p.enum;
    if (!Array.isArray(v) || !v.length) throw new Error(`the API document lists no values of ${schema}.${prop}`);
    return v.filter((x) => x !== ''); // "" is "none" (a healthy node's fault)
  };
  enums.provisionStates = values('Node', 'provision_state');
  enums.faults = values('Node', 'fault');
  enums.powerStates = values('Node', 'power_state');
  enums.instanceStates = values('Instance', 'state');
  enums.jobStates = values('Job', 'state');
}
