// OpenSSL's libcrypto (EVP API only): AES-128 for resolving private
// addresses; X25519, ChaCha20-Poly1305, SHA-256 and HMAC for the ESPHome
// proxy's Noise handshake.
#include <openssl/evp.h>
#include <openssl/hmac.h>
