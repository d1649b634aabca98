/** The PAS message contracts of the Engram Bus: parsing, canonical rendering, budget validation, SharedBriefMicro. */
export * from './agent-message.js';
export * from './parse-agent-message.js';
export * from './render-agent-message.js';
export * from './inline-code.js';
export * from './message-validator.js';
export * from './shared-brief.js';
