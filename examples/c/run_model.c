/* Run an exported Relay module (kind "graph") from C, without Python.
 *
 *   relay compile examples/demo_cnn.onnx -o build/cnn.relaylib
 *   cc -O2 -I build/cnn.relaylib examples/c/run_model.c -ldl -o build/run_model
 *   build/run_model build/cnn.relaylib input0.bin output0.bin
 *
 * Each input file holds the raw C-contiguous bytes of one input (as numpy's tofile writes
 * them); each output file receives one output's bytes. model.h, written next to lib.so by
 * export, gives the shapes, dtypes, workspace size and the size of the derived constants
 * (docs/c_abi.md).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#ifndef RELAY_KIND_GRAPH
#error "this example runs modules of kind graph (static shapes, no control flow)"
#endif

static int64_t dtype_size(const char *dt) {
  if (!strcmp(dt, "float64") || !strcmp(dt, "int64") || !strcmp(dt, "uint64")) return 8;
  if (!strcmp(dt, "float32") || !strcmp(dt, "int32") || !strcmp(dt, "uint32")) return 4;
  if (!strcmp(dt, "float16") || !strcmp(dt, "bfloat16") || !strcmp(dt, "int16") ||
      !strcmp(dt, "uint16"))
    return 2;
  return 1;
}

static int64_t tensor_bytes(int ndim, const int64_t *shape, const char *dtype) {
  int64_t n = dtype_size(dtype);
  for (int i = 0; i < ndim; i++) n *= shape[i];
  return n;
}

static void *read_file(const char *path, int64_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); return NULL; }
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = aligned_alloc(64, (*size + 63) / 64 * 64 + 64);
  if (buf && *size && fread(buf, 1, *size, f) != (size_t)*size) { free(buf); buf = NULL; }
  fclose(f);
  return buf;
}


int main(int argc, char **argv) {
  static const int ndims_in[] = {
#define X(k) RELAY_INPUT##k##_NDIM
#if RELAY_NUM_INPUTS > 0
      X(0),
#endif
#if RELAY_NUM_INPUTS > 1
      X(1),
#endif
#if RELAY_NUM_INPUTS > 2
      X(2),
#endif
#undef X
      0};
  if (RELAY_NUM_INPUTS > 3) {
    fprintf(stderr, "this example handles up to 3 inputs\n");
    return 2;
  }
  if (argc != 2 + RELAY_NUM_INPUTS + RELAY_NUM_OUTPUTS) {
    fprintf(stderr, "usage: %s MODULE_DIR INPUT.bin x%d OUTPUT.bin x%d\n", argv[0],
            RELAY_NUM_INPUTS, RELAY_NUM_OUTPUTS);
    return 2;
  }
  const char *dir = argv[1];
  char path[4096];

  snprintf(path, sizeof path, "%s/lib.so", dir);
  void *lib = dlopen(path, RTLD_NOW);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  relay_run_fn run = (relay_run_fn)dlsym(lib, RELAY_ENTRY);
  if (!run) { fprintf(stderr, "%s\n", dlerror()); return 1; }

  /* constants: weights.bin in memory; relay_prepare fills one pointer per constant and
     computes the derived ones (layouts larger than the weights they come from, e.g. Winograd
     convolutions' transformed weights) into a buffer of RELAY_DERIVED_BYTES, once */
  snprintf(path, sizeof path, "%s/weights.bin", dir);
  int64_t wsize = 0;
  char *weights = read_file(path, &wsize);
  if (!weights) return 1;
  void *constants[RELAY_NUM_CONSTANTS + 1];
  void *derived = RELAY_DERIVED_BYTES ? aligned_alloc(64, RELAY_DERIVED_BYTES) : NULL;
  if (RELAY_DERIVED_BYTES && !derived) { fprintf(stderr, "out of memory\n"); return 1; }
#ifdef RELAY_PREPARE
  relay_prepare_fn prepare = (relay_prepare_fn)dlsym(lib, RELAY_PREPARE);
  if (!prepare) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  if (prepare(weights, derived, constants, 2) != 0) {
    fprintf(stderr, "relay_prepare failed\n");
    return 1;
  }
#else /* a module of format 1: every constant is in weights.bin */
  for (int i = 0; i < RELAY_NUM_CONSTANTS; i++) constants[i] = weights + relay_constant_offsets[i];
#endif

  /* inputs: read and check each file's size against the header */
  const int64_t *in_shapes[] = {
#if RELAY_NUM_INPUTS > 0
      relay_input0_shape,
#endif
#if RELAY_NUM_INPUTS > 1
      relay_input1_shape,
#endif
#if RELAY_NUM_INPUTS > 2
      relay_input2_shape,
#endif
      NULL};
  const char *in_dtypes[] = {
#if RELAY_NUM_INPUTS > 0
      RELAY_INPUT0_DTYPE,
#endif
#if RELAY_NUM_INPUTS > 1
      RELAY_INPUT1_DTYPE,
#endif
#if RELAY_NUM_INPUTS > 2
      RELAY_INPUT2_DTYPE,
#endif
      NULL};
  void *inputs[RELAY_NUM_INPUTS + 1];
  for (int i = 0; i < RELAY_NUM_INPUTS; i++) {
    int64_t size = 0;
    inputs[i] = read_file(argv[2 + i], &size);
    if (!inputs[i]) return 1;
    int64_t want = tensor_bytes(ndims_in[i], in_shapes[i], in_dtypes[i]);
    if (size != want) {
      fprintf(stderr, "%s: %lld bytes, input %d needs %lld\n", argv[2 + i], (long long)size, i,
              (long long)want);
      return 1;
    }
  }

  /* outputs: buffers the caller owns */
  int64_t out_bytes[] = {
#define X(k) tensor_bytes(RELAY_OUTPUT##k##_NDIM, relay_output##k##_shape, RELAY_OUTPUT##k##_DTYPE)
#if RELAY_NUM_OUTPUTS > 0
      X(0),
#endif
#if RELAY_NUM_OUTPUTS > 1
      X(1),
#endif
#if RELAY_NUM_OUTPUTS > 2
      X(2),
#endif
#undef X
      0};
  if (RELAY_NUM_OUTPUTS > 3) {
    fprintf(stderr, "this example handles up to 3 outputs\n");
    return 2;
  }
  void *outputs[RELAY_NUM_OUTPUTS + 1];
  for (int i = 0; i < RELAY_NUM_OUTPUTS; i++) outputs[i] = aligned_alloc(64, out_bytes[i] + 64);

  void *workspace = aligned_alloc(64, (RELAY_WORKSPACE_BYTES + 63) / 64 * 64 + 64);
  int32_t rc = run(inputs, outputs, constants, workspace, 2);
  if (rc != 0) { /* a run-time error in the model, e.g. an index out of range */
    relay_last_error_fn last_error = (relay_last_error_fn)dlsym(lib, "relay_last_error");
    fprintf(stderr, "relay_run failed: %s\n", last_error ? last_error() : "unknown error");
    return 1;
  }

  for (int i = 0; i < RELAY_NUM_OUTPUTS; i++) {
    FILE *f = fopen(argv[2 + RELAY_NUM_INPUTS + i], "wb");
    if (!f || fwrite(outputs[i], 1, out_bytes[i], f) != (size_t)out_bytes[i]) {
      perror(argv[2 + RELAY_NUM_INPUTS + i]);
      return 1;
    }
    fclose(f);
    printf("output %d: %lld bytes\n", i, (long long)out_bytes[i]);
  }
#if RELAY_NUM_OUTPUTS > 0 && defined(RELAY_OUTPUT0_ELEMENTS)
  if (!strcmp(RELAY_OUTPUT0_DTYPE, "float32")) {
    const float *y = outputs[0];
    printf("output 0 first values:");
    for (int i = 0; i < RELAY_OUTPUT0_ELEMENTS && i < 10; i++) printf(" %.6g", y[i]);
    printf("\n");
  }
#endif
  return 0;
}
