from accounts.management.commands import unassign_node
from accounts.nodes.services import node_remove


class Command(unassign_node.Command):
    help = (
        "Remove a storage node (tokenserver's remove_node): its live assignments are replaced, so that its"
        " accounts get another node when next seen, and the node is deleted. Audited."
    )
    act = staticmethod(node_remove)
    would = "Node {node} of {service} would be removed, {assignments} replaced; nothing changed."
    done = "Node {node} removed from {service}; {assignments} replaced."
