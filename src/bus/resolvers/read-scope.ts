/**
 * What a pointer source needs to know of the reader (see DerefOptions.visibleToProject in pointer-resolver.ts):
 * sources that hold sessions (`sam:`, `artifact:`, `test:`) answer only from sessions this project owns or that
 * are shared with it. Absent: full trust.
 */
export interface ReadScope {
  visibleToProject?: string;
}
