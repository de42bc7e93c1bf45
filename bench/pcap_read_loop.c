/* SPDX-License-Identifier: MIT */
/* The limit a pcap reader can reach: libpcap's own read loop over a capture, every record fetched with
 * pcap_next_ex and touched (its bytes summed, so none is skipped), nothing decoded.
 * bench/bench_flows.py compiles it (cc -O2 pcap_read_loop.c -lpcap) and times it beside nrsack.
 * Prints: records, the sum of their captured bytes. */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv) {
    char errbuf[PCAP_ERRBUF_SIZE];
    if (argc != 2) { fprintf(stderr, "usage: %s CAPTURE\n", argv[0]); return 2; }
    pcap_t *p = pcap_open_offline(argv[1], errbuf);
    if (!p) { fprintf(stderr, "%s\n", errbuf); return 2; }
    struct pcap_pkthdr *h;
    const u_char *data;
    uint64_t records = 0, sum = 0;
    int rc;
    while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
        records++;
        for (uint32_t i = 0; i < h->caplen; i++) sum += data[i];
    }
    if (rc == PCAP_ERROR) { fprintf(stderr, "%s\n", pcap_geterr(p)); return 1; }
    pcap_close(p);
    printf("%llu %llu\n", (unsigned long long)records, (unsigned long long)sum);
    return 0;
}
