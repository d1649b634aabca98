export * from './ids.js';
export * from './event.js';
export * from './artifact.js';
