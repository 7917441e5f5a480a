/*
 * tls.h -- the certificate and key of an HTTPS listener (internal to
 * src/http and src/client: onced's server and the webhook receiver of
 * `once listen`): read from their files and checked before libmicrohttpd sees
 * them, so a bad file stops the server with a message that names the file
 * and the problem instead of a bare "cannot listen".
 *
 * libmicrohttpd does the TLS itself (GnuTLS); this file only loads PEM text
 * and checks it with libcrypto, which libonce links already.
 */
#ifndef ONCE_HTTP_TLS_H
#define ONCE_HTTP_TLS_H

#include <stddef.h>

#include <microhttpd.h>

/* The PEM text MHD_OPTION_HTTPS_MEM_CERT / _KEY take, NUL-terminated and
 * once_malloc'd; once__tls_clear wipes the key before freeing it. */
typedef struct once__tls {
    char *cert;   /* the certificate, then any intermediates */
    char *key;    /* the private key, unencrypted */
} once__tls;

/* Read cert_file and key_file and check that the first holds a PEM
 * certificate, the second a PEM private key, and that the key belongs to the
 * certificate. ONCE_OK; ONCE_EIO, ONCE_ERANGE or ONCE_EINVAL with err naming
 * the flag's file and what is wrong; ONCE_ENOMEM. On failure t is cleared. */
int once__tls_load(const char *cert_file, const char *key_file, once__tls *t, char *err,
                   size_t errlen);
void once__tls_clear(once__tls *t);   /* NULL fields ok */

/* ONCE_TLS_PRIORITY_DEFAULT: the priority string unless --tls-priority says
 * otherwise (core/tls_priority.h, shared with the gRPC listener). */
#include "core/tls_priority.h"

/* What MHD_start_daemon needs to serve t: the flag to OR in (0 without a
 * certificate) and, for MHD_OPTION_ARRAY, opts filled with the certificate,
 * key and priority options (priority NULL: ONCE_TLS_PRIORITY_DEFAULT), or
 * only MHD_OPTION_END. t and priority must outlive the daemon. */
unsigned once__tls_mhd(const once__tls *t, const char *priority, struct MHD_OptionItem opts[4]);

/* 1 when this libmicrohttpd can serve HTTPS (built with GnuTLS). */
int once__tls_supported(void);

/* ---------------------------------------------------------------------------
 * Credentials that change while the server runs (onced's SIGHUP). MHD keeps
 * the PEM text of MHD_OPTION_HTTPS_MEM_CERT for the daemon's life; instead
 * GnuTLS asks for the certificate at each handshake
 * (MHD_OPTION_HTTPS_CERT_CALLBACK), and once__tls_live answers with the pair
 * loaded last: new connections get a new certificate, a connection keeps the
 * one it was handshaken with.
 *
 * Replaced pairs stay in memory until once__tls_live_free: a connection's
 * GnuTLS session refers to its pair until it closes, and nothing tells when
 * the last one that used it did. A pair is a few KiB and a reload is an
 * operator's act, so this is bounded by how often certificates are rotated.
 *
 * Built with -DONCE_TLS=OFF (no GnuTLS) these are all there, but
 * once__tls_live_new refuses every pair: onced's --tls-cert and the gRPC
 * listener's TLS say that TLS was not built in (ONCE_TLS_OFF_MSG,
 * core/tls_priority.h).
 * The GnuTLS types are named by their struct tags, which GnuTLS's
 * typedefs name too, so that this header needs no GnuTLS header.
 */
struct gnutls_pcert_st;
struct gnutls_privkey_st;

typedef struct once__tls_live once__tls_live;

/* Load and check the pair (once__tls_load's checks, then GnuTLS's own
 * import): ONCE_OK with *out serving it, or an error with err naming the
 * file and the problem (ONCE_EUNSUPPORTED and ONCE_TLS_OFF_MSG without
 * TLS). */
int once__tls_live_new(const char *cert_file, const char *key_file, once__tls_live **out,
                       char *err, size_t errlen);
/* Load the pair again from these files; serve it from the next handshake on
 * (ONCE_OK, with the SHA-256 of the new certificate's DER, hex, in sha256),
 * or keep the pair served and say why in err. Any thread. */
int once__tls_live_reload(once__tls_live *l, const char *cert_file, const char *key_file,
                          char sha256[2 * 32 + 1], char *err, size_t errlen);
/* The pair served now, as a gnutls_certificate_retrieve_function2 returns
 * it; valid until once__tls_live_free. Any thread. */
void once__tls_live_pick(once__tls_live *l, struct gnutls_pcert_st **pcert, unsigned *n,
                         struct gnutls_privkey_st **key);
void once__tls_live_free(once__tls_live *l);   /* after MHD_stop_daemon; NULL ok */

#ifdef ONCE_HAVE_TLS
#include <gnutls/abstract.h>

/* MHD's options for a daemon that serves l: the flag to OR in, and opts
 * with the certificate callback pick (which finds l through the
 * connection) and the priority string (NULL: ONCE_TLS_PRIORITY_DEFAULT). */
unsigned once__tls_live_mhd(gnutls_certificate_retrieve_function2 *pick, const char *priority,
                            struct MHD_OptionItem opts[3]);
#endif

#endif /* ONCE_HTTP_TLS_H */
