/*
 * libFuzzer target for the kubeconfig parser: any bytes give either a configuration
 * with an https server (http only when insecure connections are allowed) and a
 * namespace, or an error with a message and an empty configuration. The first byte
 * picks the options. No crash, no leak, no file read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_config cfg;
    struct kube_config_opts opts = {0};
    struct util_err err = {0};
    int rc;

    if (size < 1)
        return 0;
    opts.allow_insecure = data[0] & 1;
    if (data[0] & 2)
        opts.context = "c";
    rc = kube_config_parse(&cfg, (const char *)data + 1, size - 1, (data[0] & 4) ? "/base" : NULL,
                           &opts, &err);
    if (rc != 0) {
        if (err.msg[0] == '\0' || cfg.server != NULL || cfg.namespace != NULL)
            abort();
        return 0;
    }
    if (cfg.server == NULL || cfg.namespace == NULL || cfg.context == NULL)
        abort();
    if (strncmp(cfg.server, "https://", 8) != 0 &&
        !(opts.allow_insecure && strncmp(cfg.server, "http://", 7) == 0))
        abort();
    if (cfg.insecure && !opts.allow_insecure)
        abort();
    if ((cfg.ca_pem != NULL) != (cfg.ca_len > 0 || cfg.ca_pem != NULL))
        abort();
    if ((cfg.cert_pem || cfg.cert_path) != (cfg.key_pem || cfg.key_path))
        abort();
    if ((data[0] & 4) && cfg.token_file != NULL && cfg.token_file[0] != '/')
        abort();
    kube_config_free(&cfg);
    return 0;
}
